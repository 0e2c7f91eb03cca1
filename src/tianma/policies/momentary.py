"""Is a message news of the moment — something that just happened, the user stepping away or
back — rather than something that lasts? Pure functions, Chinese and English, no model.

People tell an assistant what just happened as they would a friend (“Just landed.”, “刚炒了盘回锅
肉，香得很”, “the u-bahn is delayed AGAIN”, “brb”, “到站了 回聊”). Read as lasting facts, such messages sat in
every later prompt and, being near some wish in meaning, closed it (“Just got back from a lovely
10K!” closed a running-shoe budget). They hold for the day they were said
(:func:`tianma.policies.statements.classify_statement`). A change in the user's life said the
same way (“I just moved to Berlin”, “刚换了工作”, “just started a new job”) lasts: it is kept apart
by :data:`_LIFE_CHANGE`.
"""

from __future__ import annotations

import re

# fmt: off
_PAST = (r"(?:(?!(?:need|feed|seed|speed|bleed|breed|proceed|succeed|exceed|indeed|bed|red|shed|wed)\b)\w+ed|got|had|did|made|came|went|saw|ate|drank|ran|won|lost|broke|fell|heard|found|left|woke|"
         r"spent|paid|took|bought|sent|sold|met|caught|threw|hit|cut|read|wrote|gave|told|felt|slept|drew|"
         r"sat|stood|swam|rode|drove|flew|bit|stole|forgot|blew|shook|tore|wore|burnt|spilt|built)")
_JUST = re.compile(rf"(?<!金)刚(?:刚)?(?![好需性强毅柔度才能])|(?<!\bit )(?<!\bthat )(?<!\bthis )\bjust (?:\w+ )?{_PAST}\b|\b{_PAST} (?:\w+ ){{0,4}}finally\b", re.IGNORECASE)
"""Said to have just happened: 刚/刚刚 …, “just landed”, “Fixed the windmill finally”, not “it just felt right” (not 刚才: “你刚才那段…” is about
the last answer; not “finally …”: “we finally upgraded to Java 21” is a new state)."""
_AGAIN = re.compile(rf"\b{_PAST}\b.{{0,40}}\bagain\b", re.IGNORECASE)
"""Something that happened once more (“The dog's pinched my sandwich again”). Not 又…了: 又考了个叉车证,
又穷回去了 tell a new state."""
_AWAY = re.compile(
    r"回聊|等会儿?(?:说|聊|再说)|待会儿?(?:说|聊|再说)|先(?:去)?忙了|先撤了?|(?:^|[，,。！!\s])(?:我)?(?:到家|到站|下班|起床)了(?=[，,。！!~～\s]|$)|"
    r"\b(?:brb|ttyl|gtg|g2g|gotta go|be right back|back in a (?:sec|second|min|minute|moment|bit)|I'm back(?=\W*$)|I am back(?=\W*$))\b",
    re.IGNORECASE,
)
"""The user steps away or is back: about the conversation, not about them."""
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|me|we|we're|we've)\b", re.IGNORECASE)
_LIFE_CHANGE = re.compile(
    r"搬|换了?(?:工作|岗|城市|单位|公司|手机|车|电脑)|调(?:到|去|岗)|入职|离职|辞职|退休|毕业|结婚|离婚|订婚|怀孕|怀上|出生|确诊|诊断|查出|"
    r"戒了|领养|养了|买了(?:房|车)|升职|晋升|升了|转正|分手|开始|不再|以后|今后|从此|考上|上了?(?:幼儿园|小学|初中|高中|大学)|入门|学会|"
    r"拿到|到手|发现|过敏|"
    r"\b(?:moved|moving|relocated|started|starting|switched|quit|stopped|gave up|retired|graduated|married|engaged|divorced|"
    r"pregnant|expecting|born|diagnosed|adopted|promoted|hired|joined|enrolled|became|signed up|no longer|these days|from now on|"
    r"found out|learn(?:ed|t) that|reali[sz]ed|turns out|allergic|turned \d+|"
    r"new job|bought (?:a|our|my) (?:house|home|flat|car|apartment)|got (?:a|the|my|our) (?:new )?(?:job|dog|puppy|cat|kitten|car|flat|house|apartment|place))\b",
    re.IGNORECASE,
)
"""A change in the user's life said as news (“I just moved to Berlin”, “刚换了工作”): it lasts."""
_ASKS = re.compile(r"你|您|请|给我|帮我|推荐|别|不要|叫我|喊我|称呼我|随便|尽管|\b(?:you|your|me|please|pls|recommend|suggest|use|give|show|send|keep)\b", re.IGNORECASE)
"""It asks something of the assistant (“Just got a raise!! … so show me the good stuff”): not only news."""
# fmt: on


def steps_away(text: str) -> bool:
    """The user steps away or is back (“brb”, “到站了 回聊”, “I'm back”)."""
    return _AWAY.search(text) is not None


def happened_just_now(text: str) -> bool:
    """The message tells something of this moment — it just happened, happened once more to
    someone or something else, or the user steps away — and neither a change in the user's life
    nor a request."""
    if _LIFE_CHANGE.search(text) or _ASKS.search(text):
        return False
    if _JUST.search(text) or _AWAY.search(text):
        return True
    return _AGAIN.search(text) is not None and _FIRST_PERSON.search(text) is None


def tells_a_life_change(text: str) -> bool:
    """The message tells a change in the user's life (:data:`_LIFE_CHANGE`: 离职, 搬家, “I moved”, “started …”)."""
    return _LIFE_CHANGE.search(text) is not None
