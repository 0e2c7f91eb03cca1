"""The recurring-topic write rule: a topic the user comes back to, at least 3 turns apart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tianma.text.tokenize import nouns

MIN_GAP = 3
"""Mentions closer than this many turns are one conversation about it, not a recurrence."""
MAX_TOPICS = 3
"""At most this many recurring topics are proposed per reflection."""


@dataclass(frozen=True, slots=True)
class RecurringTopic:
    topic: str
    event_ids: tuple[str, ...]


def recurring_topics(messages: Sequence[tuple[str, str]]) -> list[RecurringTopic]:
    """Topics (content nouns) mentioned in ≥ 2 of the user's messages ≥ 3 turns apart.

    Args:
        messages: ``(event_id, text)`` of the user's messages, in order.
    """
    seen: dict[str, list[int]] = {}
    for position, (_, text) in enumerate(messages):
        for noun in set(nouns(text)):
            seen.setdefault(noun, []).append(position)
    found = []
    for noun, spots in seen.items():
        kept = [spots[0]]
        for spot in spots[1:]:
            if spot - kept[-1] >= MIN_GAP:
                kept.append(spot)
        if len(kept) >= 2:
            found.append(RecurringTopic(noun, tuple(messages[i][0] for i in kept)))
    found.sort(key=lambda t: (-len(t.event_ids), t.topic))
    return found[:MAX_TOPICS]
