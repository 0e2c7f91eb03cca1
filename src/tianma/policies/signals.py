"""Signals: their confidences and implicit detection from the user's next move."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tianma.policies.cues import detect_cue

SignalType = Literal[
    "like", "dislike", "correction", "omission", "resubmit", "repeat", "silence", "impatience", "praise", "regenerate"
]
Feedback = Literal["like", "dislike", "correction"]
FEEDBACK_KINDS: tuple[Feedback, ...] = ("like", "dislike", "correction")

CONFIDENCE: dict[SignalType, float] = {
    "like": 0.9,
    "dislike": 0.9,
    "correction": 0.9,
    "resubmit": 0.6,
    "repeat": 0.5,
    "silence": 0.3,
    "regenerate": 0.3,
}
"""How much each kind of signal is believed (seed 001 §3.3). ``regenerate``: the client asked for
another reply to the same message (a regenerate or retry button) — weak, the user may only want
a variant."""
STOPPED_CONFIDENCE = 0.4
"""An ``impatience`` signal on a reply the user stopped (the client went away mid-reply): as
sure as a plain 算了 / never mind (:data:`tianma.policies.cues.IMPATIENCE`)."""

REPHRASE_JACCARD = 0.6
"""Token overlap above which a follow-up message is the same request said again."""
REPEAT_RELEVANCE = 0.8
"""Retrieval relevance above which a question matches one asked in an earlier dialogue."""

_QUESTION = re.compile(
    r"[?？]|^(what|when|where|who|why|how|which|is|are|do|does|did|can|could|should)\b|"
    r"(吗|呢|么|什么|怎么|为什么|哪|谁|几|多少|是不是|能不能|可不可以)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DetectedSignal:
    """An implicit signal, judging an earlier turn (``target_event_id``)."""

    type: SignalType
    target_event_id: str
    confidence: float
    detail: str


def is_question(text: str) -> bool:
    """Whether a message asks something (Chinese or English)."""
    return bool(_QUESTION.search(text.strip()))


_SENTENCE_END = re.compile(r"(?<=[.!?。！？…])\s*")


def is_only_question(text: str) -> bool:
    """Whether every sentence of a message asks something ("周六呢？"), i.e. it states nothing.

    "I went to the group yesterday! How about you?" states something: it is not only a question.
    """
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip(" .!?。！？…")]
    return bool(sentences) and all(is_question(s) for s in sentences)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Overlap of two token sets."""
    return len(a & b) / len(a | b) if a and b else 0.0


def detect_rephrase(
    current: frozenset[str], previous: frozenset[str], previous_event_id: str | None
) -> DetectedSignal | None:
    """The user says the previous request again in other words: the last reply missed."""
    if previous_event_id is None:
        return None
    overlap = jaccard(current, previous)
    if overlap < REPHRASE_JACCARD:
        return None
    return DetectedSignal(
        "resubmit",
        previous_event_id,
        CONFIDENCE["resubmit"],
        f"token overlap {overlap:.2f} with the previous message",
    )


def detect_text_cue(message: str, previous_event_id: str | None) -> DetectedSignal | None:
    """A correction, an omission, impatience or praise in this message, judging the previous reply."""
    if previous_event_id is None:
        return None
    cue = detect_cue(message)
    if cue is None:
        return None
    return DetectedSignal(cue.type, previous_event_id, cue.strength, f"cue: {cue.evidence}")


def detect_repeat(
    message: str, earlier: list[tuple[str, str, float]], dialogue_id: str
) -> DetectedSignal | None:
    """The user asks again what they asked in another dialogue.

    Args:
        message: this turn's message.
        earlier: ``(event_id, dialogue_id, relevance)`` of retrieved earlier user questions.
        dialogue_id: the current dialogue.
    """
    if not is_question(message):
        return None
    for event_id, other_dialogue, relevance in earlier:
        if other_dialogue != dialogue_id and relevance >= REPEAT_RELEVANCE:
            return DetectedSignal(
                "repeat",
                event_id,
                CONFIDENCE["repeat"],
                f"asked before in dialogue {other_dialogue} (relevance {relevance:.2f})",
            )
    return None
