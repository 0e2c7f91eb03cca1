"""The paired bootstrap on cases whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from tianma.errors import InvalidInputError
from tianma.experiments.stats import median_interval, paired_bootstrap, paired_ratio


def test_a_constant_gain_is_exact_and_real() -> None:
    base = {f"q{i}": float(i % 2) * 0.5 for i in range(50)}
    var = {q: x + 0.1 for q, x in base.items()}
    d = paired_bootstrap(base, var)
    assert d.units == 50 and d.difference == pytest.approx(0.1)
    assert d.low == pytest.approx(0.1) and d.high == pytest.approx(0.1) and d.real


def test_pairing_removes_what_the_questions_share() -> None:
    rng = np.random.default_rng(1)
    hardness = rng.uniform(0, 1, 400)  # large differences between questions, shared by both arms
    base = {f"q{i}": float(h) for i, h in enumerate(hardness)}
    var = {f"q{i}": float(h + 0.02 + rng.normal(0, 0.01)) for i, h in enumerate(hardness)}
    d = paired_bootstrap(base, var)
    assert d.real and 0.018 < d.low < d.difference < d.high < 0.022  # an unpaired test would see nothing
    sd = np.std([var[q] - base[q] for q in base])
    assert d.high - d.low == pytest.approx(2 * 1.96 * sd / np.sqrt(400), rel=0.15)  # the normal approximation


def test_no_difference_is_not_called_real_and_units_are_matched_by_id() -> None:
    rng = np.random.default_rng(2)
    base = {f"q{i}": float(x) for i, x in enumerate(rng.integers(0, 2, 300))}
    var = {q: float(x) for q, x in zip(reversed(list(base)), rng.integers(0, 2, 300), strict=True)}
    var["only-in-variant"] = 1.0
    d = paired_bootstrap(base, var)
    assert d.units == 300 and d.low < 0 < d.high and not d.real
    with pytest.raises(InvalidInputError):
        paired_bootstrap({"a": 1.0}, {"b": 1.0})


def test_a_variant_twice_as_slow_per_turn_is_twice_as_slow_whatever_the_turns_cost() -> None:
    rng = np.random.default_rng(3)
    cost = rng.lognormal(3, 1, 300)  # turns differ by orders of magnitude, both arms alike
    base = {f"t{i}": float(c) for i, c in enumerate(cost)}
    var = {f"t{i}": float(2 * c * rng.lognormal(0, 0.05)) for i, c in enumerate(cost)}
    r = paired_ratio(base, var)
    assert r.units == 300 and r.real and 1.95 < r.low < r.ratio < r.high < 2.05
    assert r.baseline == pytest.approx(float(np.median(cost)))


def test_the_same_cost_with_noise_is_not_called_faster_or_slower() -> None:
    rng = np.random.default_rng(4)
    cost = rng.lognormal(3, 1, 200)
    base = {f"t{i}": float(c * rng.lognormal(0, 0.2)) for i, c in enumerate(cost)}
    var = {f"t{i}": float(c * rng.lognormal(0, 0.2)) for i, c in enumerate(cost)}
    r = paired_ratio(base, var)
    assert r.low < 1 < r.high and not r.real
    with pytest.raises(InvalidInputError, match="positive"):
        paired_ratio({"a": 0.0}, {"a": 1.0})


def test_the_median_latency_interval_holds_the_median_and_narrows_with_more_turns() -> None:
    rng = np.random.default_rng(5)
    few, many = rng.lognormal(4, 0.5, 30), rng.lognormal(4, 0.5, 3000)
    m1, lo1, hi1 = median_interval(few)
    m2, lo2, hi2 = median_interval(many)
    assert lo1 <= m1 <= hi1 and lo2 <= m2 <= hi2
    assert lo2 < np.exp(4) < hi2 and (hi2 - lo2) < (hi1 - lo1) / 4  # ~√100 narrower
    with pytest.raises(InvalidInputError):
        median_interval([])
