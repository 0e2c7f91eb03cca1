"""Implicit feedback cues in the text of the user's next message: correction, impatience, praise.

Strengths follow one rule, "rather weak than wrong" (seed 001 §2.3):

| cue | examples | strength |
|---|---|---|
| correction, explicit | 不对 / 错了 / 不是这个意思 / that's wrong / not what I meant / no, I meant | 0.9 |
| correction, pointed | 我说的是… / 你应该… / I said… / you should… (leading the message) | 0.8 |
| correction, contrast | 不是…而是… leading the message | 0.6 |
| correction, weak | the pointed forms mid-sentence ("…you should see it") | 0.3 |
| praise, explicit | 谢谢，很有用 / thanks, that helps / great answer | 0.9 |
| praise | 太好了 / 完美 / perfect | 0.7 |
| omission | 你漏了… / 还少了… / 忘了说… / you forgot… / you left out… / you didn't mention… (leading) | 0.6 (mid-sentence 0.3) |
| impatience | 算了 / 随便吧 / forget it / never mind / whatever | 0.4 |
| impatience, soft | 就这样吧 / 不用了 (may also just close the topic) | 0.3 |
| praise, polite | a bare 谢谢 / thanks | 0.3 |

Impatience is a weak negative: below 0.5, so on its own it never causes a write.
A correction asked as a question (错了吗？) counts half; praise that is negated or asked counts not at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

CueType = Literal["correction", "omission", "impatience", "praise"]

CORRECTION_EXPLICIT = 0.9
CORRECTION_POINTED = 0.8
CORRECTION_CONTRAST = 0.6
CORRECTION_WEAK = 0.3
OMISSION = 0.6
"""A follow-up asking for what the reply left out judges the reply (seed 001 §2.3), not a healthy
follow-up: a negative signal, weaker than a correction."""
OMISSION_WEAK = 0.3
PRAISE_EXPLICIT = 0.9
PRAISE = 0.7
IMPATIENCE = 0.4
IMPATIENCE_SOFT = 0.3
PRAISE_POLITE = 0.3

_PRIORITY: dict[CueType, int] = {"correction": 4, "omission": 3, "impatience": 2, "praise": 1}
"""On equal strength the more informative cue wins: 谢谢，不用了 is impatience, not praise."""


@dataclass(frozen=True, slots=True)
class Cue:
    """One implicit cue about the previous reply."""

    type: CueType
    strength: float
    """How much the cue is believed, 0–1 (see the module table)."""
    evidence: str
    """The words that carried it."""


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# (type, strength when leading the message, strength mid-sentence, pattern)
# fmt: off
_RULES: tuple[tuple[CueType, float, float, re.Pattern[str]], ...] = (
    # 不对称 / 不对劲 / 对不对 / 不是不对 are not corrections; 我错了 / 我说错了 / 没错 are not either.
    ("correction", CORRECTION_EXPLICIT, CORRECTION_EXPLICIT, _rx(r"(?<!对)(?<!不是)(?<!并不是)不对(?![称劲头口付等外应])")),
    ("correction", CORRECTION_EXPLICIT, CORRECTION_EXPLICIT,
     _rx(r"(?<![没不我])(?<!我说|我打|我记|我写|我搞|我弄|我看|我算|是我|我也)(?<!我想)错了")),
    ("correction", CORRECTION_EXPLICIT, CORRECTION_EXPLICIT,
     _rx(r"不是(?:这个|那个|我的)?意思|不是我(?:想)?要的|答非所问|你(?:理解|搞|弄)错了|你没(?:明白|听懂|理解)")),
    ("correction", CORRECTION_EXPLICIT, CORRECTION_EXPLICIT,
     _rx(r"\b(?:that's|that is|this is|you're|you are)\s+(?:(?:just|all|completely|totally)\s+)?(?:wrong|incorrect|not (?:right|correct|true))\b")),
    ("correction", CORRECTION_EXPLICIT, CORRECTION_EXPLICIT,
     _rx(r"\bnot what I (?:meant|asked(?: for)?|said|wanted)\b|\b(?:no|nope),?\s+I meant\b|\byou misunderstood\b|\bwrong answer\b")),
    ("correction", CORRECTION_POINTED, CORRECTION_WEAK, _rx(r"我(?:说|问)的是|我的意思是|我是说(?!真的|认真的|着玩)")),
    ("correction", CORRECTION_POINTED, CORRECTION_WEAK, _rx(r"你(?:本来)?应该(?!是|会|也|还|不会|没|很|挺|知道吧|听说)|你该(?!不会)")),
    ("correction", CORRECTION_POINTED, CORRECTION_WEAK, _rx(r"\bI (?:said|meant)\b")),
    ("correction", CORRECTION_POINTED, CORRECTION_WEAK, _rx(r"\byou should(?:'ve| have)\b(?!\s+(?:seen|been|heard|tried)\b)")),
    # "you should see it / try it / come" recommends, it does not correct.
    ("correction", CORRECTION_POINTED, CORRECTION_WEAK,
     _rx(r"\byou should\b(?!(?:'ve| have)\b)(?!\s+(?:see|try|visit|watch|come|go|check|read|definitely|totally|really|get|be)\b)")),
    ("correction", CORRECTION_WEAK, CORRECTION_WEAK, _rx(r"\byou should\s+(?:see|try|visit|watch|come|go|check|read)\b")),
    ("correction", CORRECTION_CONTRAST, CORRECTION_WEAK, _rx(r"不是[^，,。！？!?]{1,20}?[，,]?\s*而是")),
    ("omission", OMISSION, OMISSION_WEAK,
     _rx(r"你(?:还)?(?:漏了|漏掉了?|落了|忘了(?:说|提|讲)?|没(?:说|提|讲)(?:到)?|少(?:说|讲)了)|还(?:少了|漏了|差)[^，,。]{0,8}(?:没说|没讲|没提)?|刚才(?:没|漏)(?:说|提|讲)"
         r"|\byou (?:forgot|missed|left out|skipped|didn't (?:mention|cover|include|say))\b|\bwhat about the\b")),
    # 算了一下 / 计算了 / 算了算 are arithmetic; 算了 alone, 那算了, 还是算了 give up.
    ("impatience", IMPATIENCE, IMPATIENCE, _rx(r"(?:^|(?<=[\s，,。.!！~～那就唉哎嗯吧])|(?<=还是|要不|我看))算了(?!一下|一遍|半天|好久|下|几|个|出|清|账|钱|多少|总|数|分)")),
    ("impatience", IMPATIENCE, IMPATIENCE, _rx(r"随便(?:吧|了|你|啦)|^\s*随便\s*[。.!！]?\s*$|爱咋咋地")),
    ("impatience", IMPATIENCE_SOFT, IMPATIENCE_SOFT, _rx(r"就这样吧|就这样了|不用了(?!解)")),
    ("impatience", IMPATIENCE, IMPATIENCE, _rx(r"(?<!n't )(?<!not )(?<!never )\bforget (?:it|about it)\b|\bnever ?mind\b(?=\s*(?:$|[,.!;]|then|I'll))")),
    ("impatience", IMPATIENCE, IMPATIENCE, _rx(r"^\s*(?:ugh,?\s*|oh,?\s*)?whatever\b(?=\s*(?:$|[,.!]))")),
    ("praise", PRAISE_EXPLICIT, PRAISE_EXPLICIT, _rx(r"(?<![不没])(?:很|太|非常|真|超|挺)(?:有用|有帮助|管用|实用)|帮(?:了我)?大忙|正是我(?:要|想要)的")),
    ("praise", PRAISE_EXPLICIT, PRAISE_EXPLICIT,
     _rx(r"\bthanks?(?: you)?[,!.]?\s+(?:that|this|it)(?:'s| is| was)?\s+(?:really |very |so |super )?(?:helps|helped|helpful|useful)\b"
         r"|\b(?:that|this)(?:'s| is| was)\s+(?:really |very |so |super |extremely )?(?:helpful|useful)\b|\bthat helps\b"
         r"|\bgreat (?:answer|explanation|job|response)\b|\bexactly what I (?:needed|wanted)\b")),
    ("praise", PRAISE, PRAISE, _rx(r"太好了|太棒了|(?<!不)(?<!不够)(?<!不太)完美|很棒|真棒|好极了|说得好|讲得好")),
    ("praise", PRAISE, PRAISE_POLITE, _rx(r"^\s*(?:perfect|awesome|excellent|brilliant|amazing|great)\b(?=\s*(?:$|[,.!]|thanks|thank you))")),
    ("praise", PRAISE_POLITE, PRAISE_POLITE, _rx(r"谢谢|多谢|感谢|谢啦|\b(?:thanks|thank you|thx)\b")),
)
# fmt: on
_QUESTION = _rx(r"[?？]\s*$|吗\s*[?？。]?\s*$|^\s*(?:is|are|was|did|do|does)\b")
_NEGATED = _rx(r"(?:不(?!错)|没(?!问题|事)|\bnot\b|n't\b|\bno\b)\W{0,2}\w{0,6}\W{0,2}$")
_LEADING = _rx(r"^\s*(?:(?:嗯|啊|呃|唉|哎|额|好吧|oh|um|uh|well|hmm|no|nope|ok|okay)[\s,，.。!！]*)*$")


def _is_leading(text: str, start: int) -> bool:
    """Whether a cue opens the message or a sentence (after an interjection), not the middle of one."""
    before = text[:start]
    last_stop = max(before.rfind(ch) for ch in "。！？!?.\n")
    return _LEADING.match(before[last_stop + 1 :]) is not None


def detect_cue(text: str) -> Cue | None:
    """The strongest implicit cue in the user's message about the previous reply, if any.

    Args:
        text: the user's next message, Chinese or English.

    Returns:
        A ``Cue``, or ``None`` when the message carries none; ties go to correction, then impatience.
    """
    best: Cue | None = None
    for cue_type, lead, mid, rx in _RULES:
        for m in rx.finditer(text):
            strength = lead if _is_leading(text, m.start()) else mid
            clause_end = re.search(r"[。！？!?.\n，,]|$", text[m.end() :])
            clause = text[: m.end() + (clause_end.start() if clause_end else 0) + 1]
            if cue_type == "praise" and (_NEGATED.search(text[: m.start()]) or _QUESTION.search(clause)):
                continue  # 不太有用 / not helpful / 完美吗？
            if cue_type == "correction" and _QUESTION.search(clause):
                strength /= 2  # 是不是错了？ doubts more than it corrects
            cue = Cue(cue_type, strength, m.group(0).strip())
            if best is None or (cue.strength, _PRIORITY[cue.type]) > (best.strength, _PRIORITY[best.type]):
                best = cue
    return best
