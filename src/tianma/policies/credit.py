"""Credit assignment: a signal about a turn moves the confidence of what that turn injected.

"Signals: rather weak than wrong": a signal below 0.5 never writes on its own;
two or more weak signals of one type in one dialogue merge into one of 0.7 (negative) or 0.8
(positive), which does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WRITE_THRESHOLD = 0.5
MERGE_COUNT = 2
MERGED_NEGATIVE = 0.7
MERGED_POSITIVE = 0.8
LEARNING_RATE = 0.15
"""How far one fully believed signal moves a credited record's confidence."""
FLOOR, CEILING = 0.05, 0.95

NEGATIVE = frozenset(
    {"dislike", "correction", "omission", "resubmit", "repeat", "silence", "impatience", "regenerate"}
)
POSITIVE = frozenset({"like", "praise"})


MERGED = {"merged_positive": 1, "merged_negative": -1}
"""Types of merged weak signals (not in NEGATIVE/POSITIVE: their parts are already counted)."""


def polarity(signal_type: str) -> int:
    """+1 for approval, −1 for a sign the reply missed, 0 otherwise."""
    return 1 if signal_type in POSITIVE else -1 if signal_type in NEGATIVE else MERGED.get(signal_type, 0)


def writes_alone(confidence: float) -> bool:
    """Only a signal of at least 0.5 may change memory by itself."""
    return confidence >= WRITE_THRESHOLD


def credited_confidence(current: float, signal_type: str, signal_confidence: float) -> float:
    """The credited record's new confidence after one signal that may write."""
    moved = current + LEARNING_RATE * polarity(signal_type) * signal_confidence
    return round(min(CEILING, max(FLOOR, moved)), 6)


@dataclass(frozen=True, slots=True)
class Merge:
    """Weak signals of one polarity in one dialogue, merged into a stronger one."""

    signal_ids: tuple[str, ...]
    polarity: int
    confidence: float


def merge_weak(weak: Sequence[tuple[str, str]]) -> list[Merge]:
    """Merge unmerged weak ``(signal_id, type)`` pairs of one dialogue by polarity (≥ 2 each)."""
    out = []
    for sign, value in ((-1, MERGED_NEGATIVE), (1, MERGED_POSITIVE)):
        ids = tuple(sid for sid, kind in weak if polarity(kind) == sign)
        if len(ids) >= MERGE_COUNT:
            out.append(Merge(ids, sign, value))
    return out
