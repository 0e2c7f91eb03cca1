"""Security answers known only by the sentence around them: the answer told before the question
is named, or with no lead-in the exact rules read (“第一只宠物叫豆豆，这是我邮箱的密保答案”, “My first
pet's name was Biscuit — that's the answer to my bank's security question”, “security q: first
car. answer: beetle”). A pass for :mod:`tianma.guardrails.secrets`, run after its exact rules on
what they left.

| matches | guard against false positives |
|---|---|
| a sentence that names a security question or answer (:data:`NAME`: 密保, 安全问题, 娘家姓, security question, secret answer, recovery question, maiden name, memorable word …) and gives the answer (:data:`GIVES`: 答案, 娘家姓, 填, 设, answer, maiden name, put, used …) — the whole sentence, and the next one when it opens with the answer (“answer: beetle”) | a sentence that names only the question (“my security question is first car”) or describes the answer by it (“… is the name of my first dog”), a question (?, 什么, 怎么, 吗, how, what, should …), a sentence about forgetting or resetting one, talk about security questions in general (no 我/my/our, nor 记/remember); a sentence where an exact rule already found the answer |

An answer is a plain word or a name, so no shape tells it from the words around it: the sentence
goes whole (“[密保答案已删除/security answer removed]”). Losing a sentence that only talked about
a security question costs little; keeping an answer costs the account.

:func:`topic_answers` takes the answers of the questions banks and sites ask (:data:`TOPIC`:
母亲的姓名, 第一辆车, 最喜欢的电影, first pet, city you were born in, street we grew up on …) in a
message that is about an account (:data:`ACCOUNT`: 银行, 账号, 注册, 找回, bank, account, security
question …): each “topic: answer” (also ——, —, =, “ - ”), and the answer given by a verb of
filling one in (我填的旺财, 随便填了个…, “I said Larchmont”, “I put Rex”). An English answer so
given starts with a capital; a topic said in passing (“my first car was a Corolla”) with no
separator or verb of filling in gives nothing.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

Span = tuple[int, int]

NAME = re.compile(
    r"密保|安全问题|保密问题|密码提示|提示问题|娘家姓|婚前姓|"
    r"\b(?:security|secret|recovery|challenge|verification)\s+(?:q(?:uestion)?s?|answers?)\b|\b(?:mother|mom|mum)['’]?s\s+maiden\s+name\b|"
    r"\bmemorable\s+(?:word|answer|information|name|place|date)\b|\bpassword\s+hint\b",
    re.IGNORECASE,
)
"""What names a security question or its answer."""

GIVES = re.compile(
    r"答案|回答|密保(?!问题)|娘家姓|婚前姓|填|设|写|"
    r"\b(?:answers?|answered|maiden\s+name|memorable\s+\w+|hint|put|used|use|set|chose|picked)\b",
    re.IGNORECASE,
)
"""What gives the answer, not only the question: its name (答案, answer, a maiden name …) or a
verb of filling one in (填, 设, put, used …). “my security question is first car” names a question."""

DESCRIBES = re.compile(
    r"\b(?:is|was|=)\s+(?:the\s+)?(?:name|city|street|town|school|place|make|model|colou?r|title|year)\s+(?:of|where|that|i|we|my)\b"
    r"|是[^，,。]{0,12}(?:的名字|的城市|的学校|叫什么)(?:[，,。]|$)",
    re.IGNORECASE,
)
"""An answer described by its question (“my security answer is the name of my first dog”)."""

ASKS = re.compile(
    r"[?？]|什么|啥|怎么|怎样|如何|哪|吗|呢|忘|不记得|重置|找回|修改"
    r"|不对|错|不知道|记不清|空着|"
    r"\b(?:how|what|which|why|where|when|should|could|can|do|does|did|forgot|forget|forgotten|reset|change|recover|lost"
    r"|wrong|incorrect|escapes?|something|anything|nothing|blank|empty|unknown)\b",
    re.IGNORECASE,
)
"""A sentence that asks, forgets, resets or only talks about an answer (“… is wrong”, “… is
something only I know”): no answer is given in it."""

OWNED = re.compile(r"我|咱|俺|记|存|帮|\b(?:my|our|mine|i|i'm|i've|i'd|me|remember|save|keep|note)\b", re.IGNORECASE)
"""The answer is the user's own, or to be kept (not talk about security questions in general)."""

ANSWER_NEXT = re.compile(r"\s*(?:answer|ans|a|答案|回答|答)\s*[:：=-]", re.IGNORECASE)
"""A next sentence that opens with the answer (“security q: first car. answer: beetle”)."""

_SENTENCE = re.compile(r"[^。！？!?\n]+?(?:[。！？!?\n]+|(?<=[A-Za-z0-9)])\.(?=\s|$)|$)")
MAX_SENTENCE = 240


def answer_sentences(text: str) -> list[Span]:
    """Spans of the sentences of ``text`` that give a security answer (the caller keeps only those
    no exact rule's match overlaps)."""
    if not OWNED.search(text):
        return []
    sentences = [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if m.group().strip()]
    out: list[Span] = []
    for i, (start, end) in enumerate(sentences):
        if i + 1 < len(sentences) and ANSWER_NEXT.match(text, sentences[i + 1][0]):
            end = sentences[i + 1][1]
        sentence = text[start:end]
        if (len(sentence) > MAX_SENTENCE or not NAME.search(sentence) or not GIVES.search(sentence)
                or ASKS.search(sentence) or DESCRIBES.search(sentence)):  # fmt: skip
            continue
        lead = len(sentence) - len(sentence.lstrip())
        out.append((start + lead, start + len(sentence.rstrip("。！!.\n "))))
    return out


_TOPIC_END = r"(?=[:：=\-—\s是，,。；;]|$)"
TOPIC = re.compile(
    r"(?:母亲|妈妈|母親|父亲|爸爸|父親|配偶|爱人)的?(?:姓名|名字|生日|出生地|娘家姓|小名)"
    rf"|第一(?:只|个|辆|部|所|位)[\u4e00-\u9fff]{{1,4}}?的?(?:名字|品牌|名称|型号)?{_TOPIC_END}"
    rf"|最喜欢的[\u4e00-\u9fff]{{1,4}}?{_TOPIC_END}|出生(?:地|的?城市|的?医院)|(?:小学|初中|高中)(?:的?名字|名称|校名)?"
    r"|班主任的?(?:名字|姓名)?|童年(?:的)?(?:好友|伙伴|玩伴|街道|小名|绰号)|宠物(?:的?名字)?|"
    r"\b(?:(?:mother|mom|mum|father|dad)['’]?s?\s+(?:maiden|middle|first)\s+name"
    r"|(?:first|childhood|oldest|eldest|favou?rite)\s+(?:pet|dog|cat|car|school|teacher|boss|job|(?:best\s+)?friend|concert"
    r"|album|book|movie|film|band|street|nickname|hero|toy|sports?\s+team|restaurant|vacation|holiday)(?:['’]s\s+name)?"
    r"|(?:city|town|hospital|place)\s+(?:you\s+were|i\s+was|where\s+(?:you|i)\s+(?:were|was))\s+born(?:\s+in)?"
    r"|(?:street|road|town)\s+(?:you|we|i)\s+grew\s+up\s+(?:on|in)|dream\s+job|high\s+school\s+mascot)\b",
    re.IGNORECASE,
)
"""The questions banks and sites ask for an account's recovery."""

ACCOUNT = re.compile(
    r"密保|安全问题|保密问题|密码提示|提示问题|银行|招行|工行|建行|农行|网银|账号|帐号|账户|帳戶|注册|找回|登录|登陆|验证"
    r"|\b(?:bank(?:['’]s)?|account|apple\s*id|icloud|login|log\s*in|sign(?:ed)?\s*up|verification|recovery"
    r"|security|secret\s+(?:question|answer)s?|maiden\s+name)\b",
    re.IGNORECASE,
)
"""A message about an account, where a topic of :data:`TOPIC` is a security question."""

_SEP_ANSWER = re.compile(r"\s*(?:[:：=]|——|—|–|\s-\s)\s*[“\"'「]?(?P<v>[^\n，,。；;！!？?（）()“”\"'「」]{1,40}?)\s*(?=[\n，,。；;！!？?（）()“”\"'「」]|\.(?:\s|$)|$)")
_FILLED = re.compile(
    r"(?:填了个?|填的是?|填成了?|设的是?|设成了?|写的是|答的是?|回答的是?)\s*[“\"「]?(?P<v>[^\s，。！？；、,;!?（）()“”\"'「」]{1,20})"
    r"|\bI\s+(?:put|used|answered|said|wrote|typed|entered|gave|chose|picked)\s+(?:in\s+|down\s+)?[\"“']?"
    r"(?P<en>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,2})"
)
_ASKED = re.compile(r"[?？]|什么|啥|吗|\b(?:what|which|who|how)\b", re.IGNORECASE)
_UNSURE = re.compile(r"忘|不记得|记不清|还是|或者|\b(?:forg[eo]t|don['’]t\s+remember|or)\b", re.IGNORECASE)
"""A clause that does not know the answer (“忘了当时写的全称还是简称”) gives none."""
NEAR = 40
"""A verb of filling in gives the answer of a topic at most this many characters before or after it."""
_CLAUSE_END = re.compile(r"[\n，,。；;！!？?]")


def topic_answers(text: str) -> list[Span]:
    """The answers of :data:`TOPIC` questions a message about an account gives (module text)."""
    if not ACCOUNT.search(text) or not (topics := list(TOPIC.finditer(text))):
        return []
    out: list[Span] = []
    for topic in topics:
        answer = _SEP_ANSWER.match(text, topic.end())
        if answer is not None and not _ASKED.search(answer.group("v")):
            out.append(answer.span("v"))
    # each found once, then looked up per verb (a scan per verb was quadratic on a huge message)
    topic_ends = [t.end() for t in topics]
    clause_ends = [m.end() for m in _CLAUSE_END.finditer(text)]
    unsure = [m.span() for m in _UNSURE.finditer(text)]
    for filled in _FILLED.finditer(text):
        group = "v" if filled.group("v") else "en"
        first = bisect_right(topic_ends, filled.start() - NEAR)  # topics are in order and do not overlap
        near = first < len(topics) and topics[first].start() < filled.end() + NEAR
        if not near or _ASKED.search(filled.group(group)):
            continue
        before = bisect_right(clause_ends, filled.start())
        start = clause_ends[before - 1] if before else 0
        doubt = bisect_left(unsure, (start, -1))
        if doubt == len(unsure) or unsure[doubt][1] > filled.end(group):
            out.append(filled.span(group))
    return out
