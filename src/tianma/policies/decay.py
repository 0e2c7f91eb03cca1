"""Forgetting (seed 001 §3.4): 30 days without a hit costs 20 % confidence; below 0.3, inactive."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

DECAY_PERIOD = timedelta(days=30)
DECAY_FACTOR = 0.8
INACTIVE_BELOW = 0.3


@dataclass(frozen=True, slots=True)
class DecayOutcome:
    confidence: float
    periods: int
    """Whole idle periods charged now."""
    inactive: bool


def decay(
    confidence: float, last_active: datetime, last_decay: datetime | None, now: datetime
) -> DecayOutcome:
    """Charge every full idle period since the later of the last hit and the last decay."""
    since = max(last_active, last_decay) if last_decay is not None else last_active
    periods = max(0, int((now - since) / DECAY_PERIOD))
    new = confidence * DECAY_FACTOR**periods
    return DecayOutcome(round(new, 6), periods, new < INACTIVE_BELOW)
