"""When a learnt item may become active, how much support moves it (pure decisions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tianma.storage.records import Kind, Status

FACT_REFLECTIONS = 2
"""A fact or preference is active only once two independent reflections proposed it."""
PREFERENCE_DAYS = 2
"""…and a preference's evidence must span two days: a mood is not a preference."""
STRATEGY_THRESHOLD = 0.7
"""A strategy is active only above this confidence (strictly) …"""
STRATEGY_EVENTS = 2
"""… and with at least this many independent supporting events."""
STRATEGY_START = 0.5
EXPERIENCE_START = 0.45
"""Experiences start between 0.4 and 0.5 (seed 001 §3.4)."""
REINFORCEMENTS_PER_DAY = 3
"""At most this many confidence reinforcements of one record per user per day."""
SUPPORT_STEP = 0.1
"""Confidence added by one independent supporting reflection."""


@dataclass(frozen=True, slots=True)
class Support:
    """The evidence behind a learnt item so far."""

    reflections: int
    """Distinct reflection runs that proposed it with new evidence."""
    events: int
    """Distinct supporting events."""
    days: int
    """Distinct days those events happened on."""
    confidence: float


@dataclass(frozen=True, slots=True)
class Decision:
    status: Literal["active", "pending"]
    reason: str


def decide(kind: Kind, support: Support) -> Decision:
    """Whether an item of ``kind`` with this support is active or still pending."""
    if kind == "strategy":
        if support.confidence > STRATEGY_THRESHOLD and support.events >= STRATEGY_EVENTS:
            return Decision("active", f"confidence {support.confidence:.2f} > {STRATEGY_THRESHOLD} "
                                      f"with {support.events} supporting events")  # fmt: skip
        return Decision("pending", f"needs confidence > {STRATEGY_THRESHOLD} and ≥ {STRATEGY_EVENTS} events "
                                   f"(has {support.confidence:.2f}, {support.events})")  # fmt: skip
    if kind in ("fact", "preference"):
        if support.reflections < FACT_REFLECTIONS:
            return Decision("pending", f"{support.reflections} of {FACT_REFLECTIONS} independent reflections")
        if kind == "preference" and support.days < PREFERENCE_DAYS:
            return Decision("pending", f"evidence from {support.days} day(s); a mood is not a preference")
        return Decision("active", f"confirmed by {support.reflections} independent reflections")
    return Decision("active", "experiences are usable at once, at low confidence")


def start_confidence(kind: Kind, proposed: float | None = None) -> float:
    """The confidence a new learnt item starts at."""
    if kind == "experience":
        return EXPERIENCE_START
    if kind == "strategy":
        return STRATEGY_START
    return min(0.8, proposed if proposed is not None else 0.6)


def reinforce(confidence: float, reinforcements_today: int) -> float:
    """Confidence after one more independent support, capped per day."""
    if reinforcements_today >= REINFORCEMENTS_PER_DAY:
        return confidence
    return min(0.95, confidence + SUPPORT_STEP)


def status_after(decision: Decision, current: Status) -> Status:
    """Never resurrect what was deprecated or disabled by a decision about support."""
    if current in ("deprecated", "disabled", "inactive"):
        return current
    return decision.status
