"""Paired comparisons: the same questions answered by the baseline and by a variant.

A benchmark scores every question (unit) under both; the difference of the means is estimated
with a **paired bootstrap** — units are resampled with replacement, the same draw for both
arms, so what varies between questions (some are hard for everyone) cancels out — and a
percentile confidence interval. A difference is called *real* when its interval excludes zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tianma.errors import InvalidInputError

RESAMPLES = 2000
LEVEL = 0.95
SEED = 18


def _paired(baseline: Mapping[str, float], variant: Mapping[str, float], level: float) -> tuple[np.ndarray, np.ndarray]:
    """The two arms' values over the units both have, in one order."""
    if not 0 < level < 1:
        raise InvalidInputError(f"level must be between 0 and 1, got {level}")
    units = sorted(set(baseline) & set(variant))
    if not units:
        raise InvalidInputError("no unit was scored by both the baseline and the variant")
    return (np.array([baseline[u] for u in units], dtype=np.float64),
            np.array([variant[u] for u in units], dtype=np.float64))  # fmt: skip


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Variant minus baseline over the units both answered."""

    units: int
    baseline: float
    """Mean of the baseline's scores."""
    variant: float
    difference: float
    """``variant − baseline``."""
    low: float
    high: float
    """The interval at :data:`LEVEL`."""

    @property
    def real(self) -> bool:
        """The interval excludes zero."""
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for a report's JSON."""
        return {"units": self.units, "baseline": self.baseline, "variant": self.variant,
                "difference": self.difference, "low": self.low, "high": self.high, "real": self.real}  # fmt: skip


def paired_bootstrap(
    baseline: Mapping[str, float], variant: Mapping[str, float], *, resamples: int = RESAMPLES,
    level: float = LEVEL, seed: int = SEED,
) -> PairedDifference:  # fmt: skip
    """The difference of means over the units both scored, with a paired bootstrap interval.

    Raises:
        InvalidInputError: no unit is scored by both, or ``level`` is not in (0, 1).
    """
    b, v = _paired(baseline, variant, level)
    d = v - b
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(b), size=(resamples, len(b)))
    means = d[draws].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return PairedDifference(len(b), float(b.mean()), float(v.mean()), float(d.mean()), float(low), float(high))


@dataclass(frozen=True, slots=True)
class PairedRatio:
    """Variant over baseline for a positive measure (a latency), unit by unit."""

    units: int
    baseline: float
    """Median of the baseline's values."""
    variant: float
    ratio: float
    """Geometric mean of the per-unit ratios ``variant / baseline``."""
    low: float
    high: float
    """The interval at :data:`LEVEL`."""

    @property
    def real(self) -> bool:
        """The interval excludes 1."""
        return self.low > 1 or self.high < 1

    def as_dict(self) -> dict[str, Any]:
        """Plain data for a report's JSON (the medians in milliseconds: it times units)."""
        return {"units": self.units, "baseline_ms": self.baseline, "variant_ms": self.variant, "ratio": self.ratio,
                "low": self.low, "high": self.high, "real": self.real}  # fmt: skip


def paired_ratio(
    baseline: Mapping[str, float], variant: Mapping[str, float], *, resamples: int = RESAMPLES,
    level: float = LEVEL, seed: int = SEED,
) -> PairedRatio:  # fmt: skip
    """How many times the baseline's value the variant's is, over the units both measured: the
    mean of the per-unit log ratios, with a paired bootstrap interval, taken back by ``exp``. A
    slow outlier turn moves a log ratio far less than it moves a difference of milliseconds.

    Raises:
        InvalidInputError: no unit is measured by both, a value is not positive, or ``level`` is
            not in (0, 1).
    """
    b, v = _paired(baseline, variant, level)
    if (b <= 0).any() or (v <= 0).any():
        raise InvalidInputError("a ratio needs positive values on both sides")
    logs = np.log(v) - np.log(b)
    draws = np.random.default_rng(seed).integers(0, len(b), size=(resamples, len(b)))
    tail = (1 - level) / 2
    low, high = np.exp(np.quantile(logs[draws].mean(axis=1), [tail, 1 - tail]))
    return PairedRatio(len(b), float(np.median(b)), float(np.median(v)), float(np.exp(logs.mean())),
                       float(low), float(high))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Rate:
    """A rate over units (users or dialogues) that each hold several trials (turns)."""

    units: int
    trials: int
    rate: float
    low: float
    high: float


def cluster_rate(counts: Mapping[str, tuple[int, int]], *, resamples: int = RESAMPLES, level: float = LEVEL,
                 seed: int = SEED) -> Rate:  # fmt: skip
    """``sum(hits) / sum(trials)`` over units given as ``unit → (hits, trials)``, with a bootstrap
    interval that resamples whole units (one user's turns are not independent of each other).

    Raises:
        InvalidInputError: no trial at all.
    """
    units = sorted(counts)
    hits = np.array([counts[u][0] for u in units], dtype=np.float64)
    trials = np.array([counts[u][1] for u in units], dtype=np.float64)
    if trials.sum() <= 0:
        raise InvalidInputError("no trial to take a rate of")
    draws = np.random.default_rng(seed).integers(0, len(units), size=(resamples, len(units)))
    sums = trials[draws].sum(axis=1)
    rates = np.divide(hits[draws].sum(axis=1), sums, out=np.zeros(resamples), where=sums > 0)
    tail = (1 - level) / 2
    low, high = np.quantile(rates, [tail, 1 - tail])
    return Rate(len(units), int(trials.sum()), float(hits.sum() / trials.sum()), float(low), float(high))


def median_interval(values: Sequence[float], *, resamples: int = RESAMPLES, level: float = LEVEL,
                    seed: int = SEED) -> tuple[float, float, float]:  # fmt: skip
    """The median of ``values`` and a bootstrap interval for it (values resampled one by one: for
    turn latencies, which depend on the machine far more than on whose turn it was).

    Raises:
        InvalidInputError: no value.
    """
    x = np.asarray(values, dtype=np.float64)
    if not len(x):
        raise InvalidInputError("no value to take a median of")
    draws = np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))
    tail = (1 - level) / 2
    low, high = np.quantile(np.median(x[draws], axis=1), [tail, 1 - tail])
    return float(np.median(x)), float(low), float(high)
