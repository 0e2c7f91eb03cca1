"""Forgetting (seed 001 §3.4), by kind: what has not been used for a while loses confidence;
below 0.3 it becomes inactive.

| kind | idle period | confidence kept per period |
|---|---|---|
| fact about who the user is, their health or their family (name, allergy, spouse …) | never fades by disuse | — |
| other facts, strategies | 30 days | 80 % (seed 001: −20 % per 30 days) |
| preference | 90 days | 80 % |
| experience | 30 days | 70 % |

"Used" is a hit: a retrieved memory, or a preference, statement or strategy that sat in the
prompt of a turn (resident items count every turn they are there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

DECAY_PERIOD = timedelta(days=30)
DECAY_FACTOR = 0.8
INACTIVE_BELOW = 0.3


@dataclass(frozen=True, slots=True)
class DecayRule:
    """How one kind of record fades when unused."""

    period: timedelta | None
    """Idle time charged once; None = never fades by disuse."""
    factor: float = DECAY_FACTOR


DEFAULT_RULE = DecayRule(DECAY_PERIOD)
NEVER = DecayRule(None)
RULES: dict[str, DecayRule] = {
    "preference": DecayRule(timedelta(days=90)),
    "experience": DecayRule(DECAY_PERIOD, 0.7),
}
_DURABLE_KEYS = ("profile.name", "profile.birthday", "profile.hometown", "health.", "relationship.", "family.")
_DURABLE_WORDS = re.compile(
    r"名字|过敏|妻子|丈夫|老婆|老公|儿子|女儿|孩子|父亲|母亲|爸爸|妈妈|父母|家人|\b(?:name|allergic|allergy|wife|husband|son|"
    r"daughter|children|kids|father|mother|parents|family)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DecayOutcome:
    confidence: float
    periods: int
    """Whole idle periods charged now."""
    inactive: bool


def rule_for(kind: str, key: str | None, content: str) -> DecayRule:
    """The decay rule of a record (see the module table)."""
    if kind == "fact" and ((key or "").startswith(_DURABLE_KEYS) or _DURABLE_WORDS.search(content)):
        return NEVER
    return RULES.get(kind, DEFAULT_RULE)


def decay(
    confidence: float, last_active: datetime, last_decay: datetime | None, now: datetime,
    rule: DecayRule = DEFAULT_RULE,
) -> DecayOutcome:  # fmt: skip
    """Charge every full idle period since the later of the last hit and the last decay."""
    if rule.period is None:
        return DecayOutcome(confidence, 0, False)
    since = max(last_active, last_decay) if last_decay is not None else last_active
    periods = max(0, int((now - since) / rule.period))
    new = confidence * rule.factor**periods
    return DecayOutcome(round(new, 6), periods, new < INACTIVE_BELOW)
