"""Strategy exploration, weight learning and A/B comparison (pure functions).

Exploration is ε-greedy over the strategies a turn selected: with probability ε the top one is
skipped for a uniformly chosen eligible alternative (or for no strategy at all), so a strategy
that never ranks first still gets tried. Forbidden-zone strategies and redlines are never chosen
by exploration, and a redline is never skipped.

Reward of one turn, in [0, 1] (not a single success bit):

==============================  ========================================
Outcome                         Reward
==============================  ========================================
explicit like (``explicit>0``)  1.0 (explicit feedback dominates)
explicit dislike (``<0``)       0.0
neutral continuation            0.6 (the starting point)
correction                      −0.5
omission (你漏了…/you forgot…)  −0.3
rephrase / resubmit             −0.3
repeat question                 −0.3
impatience (算了/就这样吧)      −0.2
healthy follow-up               +0.2, only without any negative above
==============================  ========================================

Implicit penalties add up and the result is clamped to [0, 1]. A strategy's weight then moves
by ``lr · (reward − expected)``, where ``expected`` is its running mean reward.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from tianma.policies.conflicts import trigger_key
from tianma.storage.records import MemoryRecord

DEFAULT_EPSILON = 0.2
HIGH_RISK_EPSILON = 0.05
"""Finance, health, legal: a wrong experiment costs more there."""
CREATIVE_EPSILON = 0.3
HIGH_RISK_DOMAINS = frozenset({"finance", "health", "legal"})
CREATIVE_DOMAIN = "creative"
LEARNING_RATE = 0.1

NEUTRAL_REWARD = 0.6
PENALTIES = {"correction": 0.5, "omission": 0.3, "rephrase": 0.3, "repeat": 0.3, "impatience": 0.2}
FOLLOW_UP_BONUS = 0.2
PRIOR_REWARD = 0.5
"""Expected reward of a strategy with no trials yet."""

MIN_TRIALS = 10
MIN_MARGIN = 0.1


def _clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return min(high, max(low, value))


def epsilon_for(
    domain: str,
    overrides: Mapping[str, float] | None = None,
    default: float = DEFAULT_EPSILON,
    *,
    high_risk: float = HIGH_RISK_EPSILON,
    creative: float = CREATIVE_EPSILON,
) -> float:
    """The exploration rate of a domain: a per-domain override wins, then the high-risk and
    creative rates, then ``default``."""
    if overrides and domain in overrides:
        return _clamp(float(overrides[domain]))
    if domain in HIGH_RISK_DOMAINS:
        return _clamp(float(high_risk))
    if domain == CREATIVE_DOMAIN:
        return _clamp(float(creative))
    return _clamp(float(default))


@dataclass(frozen=True, slots=True)
class Choice:
    """Which strategies a turn applies, and whether it explored."""

    chosen: tuple[MemoryRecord, ...]
    """Strategies applied this turn, in order."""
    explored: bool
    """The top strategy was deliberately skipped."""
    skipped_id: str | None
    """The top strategy skipped when exploring."""
    alternative_id: str | None
    """The alternative put first instead (``None`` when exploring "no strategy")."""


def _forbidden(record: MemoryRecord) -> bool:
    return record.data.get("zone") == "forbidden"


def explore(ranked: Sequence[MemoryRecord], epsilon: float, rng: random.Random) -> Choice:
    """ε-greedy over strategies already selected and ranked (best first).

    Draws ``rng.random()`` exactly once per call; below ``epsilon`` the top strategy is replaced
    by a uniform pick among the eligible rest plus one "none" option. Forbidden-zone strategies
    are dropped from ``chosen`` on both paths; a redline top is never skipped.
    """
    applicable = [s for s in ranked if not _forbidden(s)]
    draw = rng.random()
    if not applicable or draw >= epsilon or applicable[0].data.get("redline"):
        return Choice(tuple(applicable), False, None, None)
    top, rest = applicable[0], applicable[1:]
    options: list[MemoryRecord | None] = [s for s in rest if not s.data.get("redline")]
    options.append(None)
    pick = options[rng.randrange(len(options))] if len(options) > 1 else None
    if pick is None:
        return Choice(tuple(rest), True, top.id, None)
    chosen = (pick, *(s for s in rest if s is not pick))
    return Choice(chosen, True, top.id, pick.id)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What followed a reply: explicit feedback and implicit signals from the next move."""

    explicit: float | None
    """+1 like, −1 dislike (or correction by button), ``None`` without explicit feedback."""
    correction: bool
    """The next user message corrected the reply (不对 / that's wrong …)."""
    rephrase: bool
    """The same request resubmitted or rephrased."""
    repeat: bool
    """The question asked again."""
    follow_up: bool
    """The topic continued normally."""
    impatience: bool
    """算了 / 就这样吧."""
    omission: bool = False
    """The next message asked for what the reply left out (你漏了… / you forgot…)."""


def reward(outcome: Outcome) -> float:
    """The reward of one turn in [0, 1] (table in the module docstring)."""
    if outcome.explicit is not None and outcome.explicit > 0:
        return 1.0
    if outcome.explicit is not None and outcome.explicit < 0:
        return 0.0
    value = NEUTRAL_REWARD
    negatives = [name for name in PENALTIES if getattr(outcome, name)]
    value -= sum(PENALTIES[name] for name in negatives)
    if outcome.follow_up and not negatives:
        value += FOLLOW_UP_BONUS
    return round(_clamp(value), 6)


def update_weight(weight: float, reward: float, expected: float, lr: float = LEARNING_RATE) -> float:
    """``w ← w + lr · (reward − expected)``, clamped to [0, 1] and rounded to 6 places."""
    return round(_clamp(weight + lr * (reward - expected)), 6)


def expected_reward(stats: Mapping[str, Any]) -> float:
    """Running mean reward from ``{"trials", "reward_sum"}``; the 0.5 prior with no trials."""
    trials = int(stats.get("trials", 0) or 0)
    if trials <= 0:
        return PRIOR_REWARD
    return float(stats.get("reward_sum", 0.0) or 0.0) / trials


def record_trial(stats: Mapping[str, Any], reward: float, explored: bool) -> dict[str, Any]:
    """New stats after one trial (other keys kept): trials, reward_sum, explored_trials, last_reward."""
    out = dict(stats)
    out["trials"] = int(stats.get("trials", 0) or 0) + 1
    out["reward_sum"] = round(float(stats.get("reward_sum", 0.0) or 0.0) + reward, 6)
    out["explored_trials"] = int(stats.get("explored_trials", 0) or 0) + (1 if explored else 0)
    out["last_reward"] = reward
    return out


@dataclass(frozen=True, slots=True)
class ABResult:
    """The verdict of an A/B comparison of two strategies for one trigger."""

    winner_id: str | None
    """``None``: not enough evidence yet."""
    loser_id: str | None
    means: dict[str, float]
    trials: dict[str, int]
    reason: str


def _stats(record: MemoryRecord) -> Mapping[str, Any]:
    stats = record.data.get("stats")
    return stats if isinstance(stats, Mapping) else {}


def compare(
    a: MemoryRecord, b: MemoryRecord, min_trials: int = MIN_TRIALS, min_margin: float = MIN_MARGIN
) -> ABResult:
    """Keep the strategy with the higher mean reward once both have ``min_trials`` trials and
    the means differ by at least ``min_margin``; otherwise no winner, saying what is missing."""
    means = {r.id: round(expected_reward(_stats(r)), 6) for r in (a, b)}
    trials = {r.id: int(_stats(r).get("trials", 0) or 0) for r in (a, b)}
    summary = (
        f"{a.id} {means[a.id]:.2f} over {trials[a.id]} trials vs {b.id} {means[b.id]:.2f} over {trials[b.id]}"
    )
    short = [r.id for r in (a, b) if trials[r.id] < min_trials]
    if short:
        missing = ", ".join(f"{rid} needs {min_trials - trials[rid]} more" for rid in short)
        return ABResult(None, None, means, trials, f"{summary}: not enough trials ({missing})")
    winner, loser = (a, b) if means[a.id] >= means[b.id] else (b, a)
    margin = round(means[winner.id] - means[loser.id], 6)
    if margin <= 0 or margin < min_margin:
        return ABResult(
            None, None, means, trials, f"{summary}: margin {margin:.2f} below {min_margin:.2f}, no winner yet"
        )
    return ABResult(winner.id, loser.id, means, trials, f"{summary}: keep {winner.id}")


def ab_pairs(strategies: Sequence[MemoryRecord]) -> list[tuple[MemoryRecord, MemoryRecord]]:
    """Pairs of active, non-redline, non-forbidden strategies with the same trigger and scope.

    Each pair appears once, ``(lower id, higher id)``, in id order.
    """
    groups: dict[tuple[Any, ...], list[MemoryRecord]] = {}
    eligible = [
        s for s in strategies if s.status == "active" and not s.data.get("redline") and not _forbidden(s)
    ]
    for s in sorted(eligible, key=lambda r: r.id):
        groups.setdefault((*trigger_key(s.data.get("trigger")), s.scope), []).append(s)
    pairs = [pair for group in groups.values() for pair in combinations(group, 2)]
    return sorted(pairs, key=lambda p: (p[0].id, p[1].id))
