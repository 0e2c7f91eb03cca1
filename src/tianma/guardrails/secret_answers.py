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
"""

from __future__ import annotations

import re

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
