"""Which facet of a subject a statement names: the length of answers, their format, their
language, a budget, a time of day, a weekday … Pure functions, Chinese and English, no model.

e5-small puts every wish about *how to answer* near every other (“no markdown” and “code only,
no explanation” score as close as “keep it short” and “longer answers now”), and likewise every
wish about one domain. The facets below are the words that tell such statements apart. Two
statements that both name facets and share none are about different subjects, however close
their vectors; two that share one are about the same subject from a lower closeness
(:data:`tianma.memory.statements.SAME_ASPECT`). A statement that names no facet is left to the
vectors alone.

First written from everyday usage, not from any benchmark's sentences; measured on the
independent statement pairs (``tests/fixtures/statement_pairs``): replacements closed 124 → 138 of
318, statements about something else closed 42 → 42 of 304 (README, "How it learns"). The words
added on 2026-12-03 (money without a unit, music genres, game engines, time zones, and the
exclusions: 一点 as "a bit", 钓鱼, "no longer", "open source") came from the learning benchmark's
dev users and were accepted on the pairs: replacements closed 159 → 162, other subjects 45 → 47.
Later that day (from a dev user whose “no medical jargon, explain things like I'm a tired dad”
closed his wish for short answers): “simple/plain language” is register, not a language, and
beside jargon, explaining alone names no length; the pairs did not move. On 2026-12-04 (from a dev
user whose wish for Chinese code comments and for English terms kept closing each other) the
language of code comments became a facet of its own: dev users' hit 95.3 → 98.1 %, the pairs
unchanged. On 2026-12-05 a time of day only in clauses that tell what happened stopped naming the
clock facet (the rule written from the dev users, then checked on a fourth, fresh dev set:
hit 88.7 → 90.2 %, stale 13.4 → 13.3 %); the pairs unchanged.
"""

from __future__ import annotations

import re


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# fmt: off
ASPECTS: dict[str, re.Pattern[str]] = {
    "detail": _rx(r"(?<!苦)短(?!信|视频|途|期|发|裤|袖|板|剧)|简短|简洁|报数|公式|简单点|精简|啰嗦|太长|长一点|长点|详细|详尽|展开|细一点|写全|写细|一句|两句|三句|几句|字以内|字数|篇幅|解释|讲解|原理|步骤|一步一步|过程|说重点|大段|长篇|一大坨|"
                  r"\b(?:short|shorter|brief|briefly|concise|long(?!\s+(?:contract|time|day|days|week|weeks|run|runs|trip|trips|drive|flights?|term|walks?|way|distance|haul|shifts?|hours|commute|weekends?|story|slow|cook\w*|bak\w*|meals?|recipes?|naps?|hikes?|rides?|baths?|lunch\w*|dinners?))|(?<!no )longer(?! than (?:\d|an?\b|one|two|three|five|ten|fifteen|twenty|thirty|half))|lengthy|detailed|detail|thorough|verbose|succinct|tl;?dr|gist|sentences?|paragraphs?|"
                  r"one-liners?|walk ?throughs?|in depth|depth|explain\w*|explanations?|preamble|step[- ]by[- ]step|line by line|reasoning|elaborate|summary|summar\w+|"
                  r"essays?|walls? of text|rambl\w*)\b"),
    "format": _rx(r"格式|markdown|列表|表格|分点|要点|标题|加粗|编号|排版|符号|"
                  r"\b(?:markdown|bullets?|bullet points?|lists?|tables?|grid|headers?|headings?|bold|formatting|formatted|plain text|numbered|format|outline)\b"),
    "language": _rx(r"中文|英文|英语|汉语|繁体|简体|粤语|日语|日文|法语|德语|韩语|西班牙语|普通话|外语|"
                    r"\b(?:english|chinese|mandarin|cantonese|spanish|french|german|japanese|korean|italian|portuguese|"
                    r"(?<!simple )(?<!plain )(?<!everyday )(?<!technical )(?<!medical )(?<!clinical )language)\b"),
    "tone": _rx(r"语气|口吻|正式|随意|轻松|幽默|俏皮|严肃|规矩|客气|礼貌|活泼|表情|emoji|颜文字|段子|笑话|官方|热情|冷淡|"
                r"\b(?:tone|formal|casual|playful|humou?r|jokes?|funny|serious|polite|friendly|emojis?|emoticons?|slang|professional|chatty|warm)\b"),
    "order": _rx(r"结论|先说|开门见山|重点先|\b(?:conclusion|bottom line|lead with|up front|upfront|answer first)\b"),
    "sources": _rx(r"出处|来源|引用|参考文献|(?<!open )(?<!open-)\b(?:sources?|citations?|cite|citing|references?)\b"),
    "units": _rx(r"公里|英里|公斤|千克|磅|摄氏|华氏|公制|英制|毫升|厘米|英寸|英尺|盎司|"
                 r"\b(?:km|kms|kilomet(?:er|re)s?|miles?|metric|imperial|pounds|lbs|kg|kilos?|celsius|fahrenheit|units|grams?|"
                 r"millilit(?:er|re)s?|lit(?:er|re)s?|ounces?|oz|inch(?:es)?|centimet(?:er|re)s?|cm)\b"),
    "jargon": _rx(r"术语|专业词|行话|大白话|通俗|\b(?:jargon|technical terms|medical terms|plain (?:words|english|language)|lay(?:man|person)?'?s? terms)\b"),
    "code": _rx(r"代码|编程|\b(?:c\+\+|c#)|\b(?:python|java|javascript|typescript|golang|rust|ruby|php|swift|kotlin|gdscript|code|snippets?|scripts?)\b"),
    "engine": _rx(r"引擎|\b(?:godot|unity|unreal|gamemaker|game engine|engine)\b"),
    "spice": _rx(r"辣|川菜|湘菜|\b(?:spicy|spice|chil(?:l)?i|hot sauce|szechuan|sichuan)\b"),
    "sweet": _rx(r"甜|糖|\b(?:sweets?|sugar|sugary|desserts?|cakes?|candy)\b"),
    "diet": _rx(r"吃素|素食|素菜|荤|肉|海鲜|(?<!钓)鱼|蛋|奶|\b(?:vegetarian|vegan|meat|fish|seafood|pescatarian|plant-based|dairy|eggs?|beef|pork|chicken)\b"),
    "cooking": _rx(r"做饭|做菜|下厨|烧菜|菜谱|食谱|烹饪|炖|煲汤|烤箱|空气炸锅|电饭煲|"
                   r"\b(?:cook\w*|recipes?|meals?|meal prep|bak(?:e|es|ing)|roast\w*|stews?|slow cooker|instant pot|air fryer|oven)\b"),
    "allergy": _rx(r"过敏|\ballerg\w*"),
    "budget": _rx(r"预算|价位|价格|价钱|贵|便宜|省钱|花销|钱|穷|平价|实惠|性价比|(?:\d+|[一二三四五六七八九十两几百千万]+)\s*(?:块|元|万|千|刀|欧|镑)|超过[一二三四五六七八九十两几]?[百千万]|[$€£¥]\s?\d|"
                  r"\b(?:budget|price[ds]?|pricey|cheap|cheaper|expensive|afford\w*|spend\w*|cost|money|broke|bucks|splurge|pay for|subscriptions?|\d+k|free (?:or|and) open|free (?:tools?|apps?|software|versions?|options?|stuff))\b"),
    "clock": _rx(r"\d+\s*点|(?:[二三四五六七八九十两]|十[一二])点|一点(?:钟|半)|早上|上午|中午|下午|晚上|凌晨|夜里|傍晚|"
                 r"\b(?:\d{1,2}(?::\d\d)?\s?(?:am|pm)|\d{1,2}:\d\d|(?:at|before|after|until|till|by|around) (?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b|early|late|mornings?|afternoons?|evenings?|nights?|noon|midnight|dusk|dawn)\b"),
    "weekday": _rx(r"周[一二三四五六日天末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|工作日|休息日|"
                   r"\b(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekends?|weekdays?|day off)\b"),
    "remind": _rx(r"提醒|闹钟|叫我(?=[起醒去]|一声|$|[，。！？,.!?呀啊吧哈\s])|\b(?:remind\w*|alarms?|notif\w*|heads up)\b"),
    "exercise": _rx(r"运动|锻炼|健身|跑步|瑜伽|普拉提|力量|撸铁|游泳|"
                    r"\b(?:workouts?|exercis\w*|running|runs?|yoga|pilates|gym|training|strength|lifting|swim\w*|cardio)\b"),
    "media": _rx(r"书|小说|剧|电影|综艺|纪录片|播客|动漫|"
                 r"\b(?:(?:tv|a|the|this|that|good|new|any|some|comedy|cooking|talk|game|reality|favou?rite|netflix|streaming|kids'?) shows?|shows(?! (?:me|up|you|us|how|what|that)\b)|books?|novels?|movies?|films?|series|podcasts?|audiobooks?|documentar\w*|fiction|nonfiction|anime)\b"),
    "music": _rx(r"音乐|歌|摇滚|爵士|说唱|古典乐|电音|\b(?:music|songs?|playlists?|albums?|records|vinyl|jazz|techno|house music|rock|pop|hip[- ]hop|rap|classical|edm|metal|punk|folk|blues)\b"),
    "timezone": _rx(r"时区|北京时间|东八区|\b(?:time ?zones?|utc|gmt|bst|zulu|(?:local|london|new york|beijing|shanghai|tokyo|paris|berlin|sydney|pacific|eastern|central|mountain|home|uk|us) time)\b"),
    "seat": _rx(r"座位|靠窗|过道|\b(?:aisle|window seat|seats?)\b"),
    "device": _rx(r"安卓|苹果|手机|电脑|\b(?:android|ios|iphone|ipad|windows|mac|macos|linux|phone|laptop)\b"),
    "condition": _rx(r"二手|全新|\b(?:used|second-?hand|brand new|refurbished|pre-owned)\b"),
}
# fmt: on


_CLAUSE_BREAK = re.compile(r"[,;!?，。；！？—:：]+|\.(?!\d)|\s+(?=[\u4e00-\u9fff])")
"""Where a clause ends: punctuation (not a decimal point), or a space before a Chinese character
(Chinese typed on a phone often parts clauses with spaces: “简体就行 我女儿说简体看着方便”)."""


_TOLD = _rx(r"上回|上次|那次|结果|昨天|昨晚|前天|那天|\b(?:last|yesterday|ago|laughs?|still|was|were|had)\b|"
            r"\byou (?:gave|suggested|recommended|sent|found|booked|set up|put|picked|told)\b")
"""A clause that tells what happened (上回…，结果凌晨胃疼 · chugging milk at 2am after your chili)."""
_EXPLAIN = _rx(r"解释|讲解|\b(?:explain\w*|explanations?)\b")
_COMMENTS = _rx(r"注释|\bcomments?\b")
_REPLIES = _rx(r"回复|回答|回我|答复|说话|术语|专业词|技术名词|技术词|"
               r"\b(?:repl(?:y|ies)|answers?|respond|responses?|talk|terms|terminology)\b")


def aspects(text: str) -> frozenset[str]:
    """The facets ``text`` names (empty when it names none). “Explain it in plain words” names
    the register of the answer, not its length: beside jargon, explaining alone is no detail. The
    language of code comments is another subject than the language of the answer and its terms
    (“代码注释用中文” · “术语保留英文”: both say a language), unless the replies are named too. A time
    of day named only in what the user tells happened (“上回…，结果凌晨胃疼得直冒冷汗”) is no wish about
    when."""
    found = {name for name, pattern in ASPECTS.items() if pattern.search(text)}
    if {"jargon", "detail"} <= found and not ASPECTS["detail"].search(_EXPLAIN.sub(" ", text)):
        found.discard("detail")
    if "language" in found and _COMMENTS.search(text) and not _REPLIES.search(text):
        found = (found - {"language"}) | {"comment_language"}
    timed = [p for p in _CLAUSE_BREAK.split(text) if ASPECTS["clock"].search(p)] if "clock" in found else []
    if timed and all(_TOLD.search(p) for p in timed):
        found.discard("clock")
    return frozenset(found)


DOMAINS = frozenset({"exercise", "media", "music", "code", "device"})
"""Facets that name a whole domain of a person's life rather than one subject in it: a runner's
wishes about units, long-run days and shoe budgets all say “run”."""


KITCHEN = frozenset({"spice", "sweet", "diet", "allergy"})
"""What is cooked: cooking shares a subject with each of these (“做菜给我推荐清淡少盐的” and “剁椒鱼头
也能吃了” are one), while it is another subject than the length of an answer (“long slow cooking is
fine now” is not “long thorough answers are good”)."""


def relation(a: frozenset[str], b: frozenset[str]) -> bool | None:
    """True when two statements share a facet, False when both name facets and share none,
    None when either names none (the facets cannot tell). When both name a facet narrower than a
    domain (:data:`DOMAINS`), only those count: “long runs on Sundays now” and “up to $150 for running
    shoes” share the domain, not the subject. Cooking shares with what is cooked (:data:`KITCHEN`)."""
    if not a or not b:
        return None
    if ("cooking" in a and b & KITCHEN) or ("cooking" in b and a & KITCHEN):
        return True
    narrow_a, narrow_b = a - DOMAINS, b - DOMAINS
    if narrow_a and narrow_b:
        return bool(narrow_a & narrow_b)
    return bool(a & b)


def facet_clauses(text: str) -> list[tuple[str, frozenset[str]]]:
    """The clauses of a message of several that name a facet, with their facets (none for a
    message of one clause: the whole is that clause). “give me headers and bold text, i'm reading
    your answers in obsidian now” → [(“give me headers and bold text”, {format})]."""
    parts = [p.strip() for p in _CLAUSE_BREAK.split(text) if len(p.strip()) > 1]
    if len(parts) < 2:
        return []
    return [(p, found) for p in parts if (found := aspects(p))]
