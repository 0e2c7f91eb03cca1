"""The fact-triple write rule: a date, place, amount or relationship that led to an action.

Seed 001 §2.3 keeps "事实三元组（日期、地点、金额、关系）且触发了后续动作" in long-term memory:
"我订了3月5日去杭州的机票" matters later ("when do I fly?"), "杭州挺好的" does not. tianma calls no
tools, so the action is the user's own (booked, paid, transferred, signed up) or one they hand to
the assistant (提醒我…, remind me…). A sentence qualifies when it asserts such an action in the
first person (or with 我 omitted, as Chinese does) and names at least one of the four slots.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from tianma.text.extract import asserted_sentences

CONF_ACTION_FACT = 0.7


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# fmt: off
_ACTION = _rx(r"(?:订了|预订了?|预定了?|订好了|约了|预约了?|买了|付了|交了|转了|汇了|报名了?|报了|挂了?号|签了|租了|办了|寄了|定了|安排了|请了假|退了)"
              r"|(?:^|请|你)?(?:提醒我|帮我(?:订|预约|安排|记)|给我(?:订|定)|记得提醒)"
              r"|\b(?:I|we)(?:'ve| have| just| already)*\s+(?:booked|reserved|scheduled|paid|bought|purchased|transferred|wired|sent|signed up|registered|rented|ordered|made an appointment|moved|renewed|cancel+ed)\b"
              r"|^(?:please\s+)?(?:remind me|book me|schedule)\b")
_OTHER_SUBJECT = re.compile(r"^(?:他|她|他们|她们|朋友|同事|老板|别人|有人|[\u4e00-\u9fff]{1,3}(?:说|告诉我))")
_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\b"
_SLOTS = {
    "date": _rx(r"\d{4}\s*[-/年.]\s*\d{1,2}\s*[-/月.]\s*\d{1,2}[日号]?|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|(?:下|这)?(?:个)?(?:周|星期|礼拜)[一二三四五六日天]|\d{1,2}[号日](?!本)"
                r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"
                r"|\b(?:next\s+|this\s+|on\s+)(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b\d{4}-\d{2}-\d{2}\b"),
    "amount": _rx(r"[¥$€£]\s*\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s*(?:万|千|百)?\s*(?:元|块钱?|美元|美金|欧元|英镑|rmb|yuan|dollars?|euros?|pounds?|bucks)"),
    "place": _rx(r"(?:去|到|飞|回|在)(?P<v>[\u4e00-\u9fff]{2,6}?)(?=的|玩|出差|旅游|旅行|开会|看|参加|复查|体检|办|吃|见|找|买|上|住|$|[，,。.!！])"
                 rf"|\b(?:to|in|at)\s+(?-i:(?P<v2>(?!{_MONTHS})[A-Z][a-z]+(?:\s+(?!{_MONTHS})[A-Z][a-z]+){{0,2}}))"),
    "relationship": _rx(r"(?:给|帮|陪|和|跟|为)?我(?:的)?(?:妈妈?|爸爸?|父母|老婆|老公|妻子|丈夫|儿子|女儿|孩子|爷爷|奶奶|外公|外婆|姥姥|姥爷|哥哥?|姐姐?|弟弟?|妹妹?|男朋友|女朋友|对象|朋友|同事|老板|室友)"
                        r"|\bmy\s+(?:mom|mother|dad|father|parents|wife|husband|partner|son|daughter|kids?|children|grandma|grandmother|grandpa|grandfather|brother|sister|boyfriend|girlfriend|friend|colleague|boss|roommate)\b"),
}
_NOT_A_PLACE = re.compile(r"^(?:这|那|哪|家里|公司里|网上|手机|里面|外面|一起|上面|下面)")
# fmt: on


@dataclass(frozen=True, slots=True)
class ActionFact:
    """One sentence asserting an action together with the facts it turned on."""

    key: str
    """``event.<digest>``: stable per sentence, so the same statement twice is support, not a copy."""
    content: str
    """The sentence as a memory about the user (我 → 用户; I → the user)."""
    slots: dict[str, str]
    """Which of date, place, amount, relationship were found, and their text."""
    evidence: str
    confidence: float = CONF_ACTION_FACT


def _slots(sentence: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, rx in _SLOTS.items():
        for m in rx.finditer(sentence):
            value = m.groupdict().get("v") or m.groupdict().get("v2") or m.group(0)
            if name == "place" and _NOT_A_PLACE.match(value):
                continue
            found[name] = value.strip()
            break
    return found


def _as_memory(sentence: str) -> str:
    s = sentence.strip(" 。！？!?；;.，,")
    if re.search(r"[\u4e00-\u9fff]", s):
        s = re.sub(r"^(?:请|你)?(?:提醒我|记得提醒)", "用户要求提醒：", s)
        s = re.sub(r"我的?(?=[妈爸父母老婆公妻丈儿女孩爷奶外姥哥姐弟妹男对朋同室])", "用户的", s)
        s = s.replace("我们", "\0").replace("我", "用户").replace("\0", "用户和同伴")
        return s if "用户" in s else f"用户{s}"
    s = re.sub(r"^(?:please\s+)?remind me\b", "The user asked to be reminded", s, flags=re.IGNORECASE)
    s = re.sub(r"\bI've\b|\bI have\b", "the user has", s)
    s = re.sub(r"\bmy\b", "the user's", re.sub(r"\b(?:I|me)\b", "the user", s), flags=re.IGNORECASE)
    return s[:1].upper() + s[1:]


def action_facts(text: str) -> list[ActionFact]:
    """Sentences of one user message that assert an action turning on a date, place, amount or relationship.

    Args:
        text: the user's message, Chinese or English.

    Returns:
        One item per qualifying sentence; nothing for questions, hypotheticals, hearsay, or
        sentences with an action but none of the four slots ("我买了点东西").
    """
    out = []
    for sentence in asserted_sentences(text):
        if not _ACTION.search(sentence) or _OTHER_SUBJECT.match(sentence):
            continue
        slots = _slots(sentence)
        if not slots:
            continue
        content = _as_memory(sentence)
        digest = hashlib.blake2b(re.sub(r"\W+", "", content.lower()).encode(), digest_size=6).hexdigest()
        out.append(ActionFact(f"event.{digest}", content, slots, sentence.strip()))
    return out
