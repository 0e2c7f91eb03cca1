from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.fakes import strategy_record
from tianma.policies.exploration import (
    CREATIVE_EPSILON,
    DEFAULT_EPSILON,
    HIGH_RISK_EPSILON,
    ABResult,
    Choice,
    Outcome,
    ab_pairs,
    compare,
    epsilon_for,
    expected_reward,
    explore,
    record_trial,
    reward,
    update_weight,
)
from tianma.storage.records import MemoryRecord, Status

_T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _strategy(
    id: str,
    content: str = "回答简短",
    *,
    scope: str = "global",
    status: Status = "active",
    **data: Any,
) -> MemoryRecord:
    return strategy_record(id, content, scope=scope, status=status, data=data)


def _outcome(**kw: Any) -> Outcome:
    base: dict[str, Any] = {
        "explicit": None,
        "correction": False,
        "rephrase": False,
        "repeat": False,
        "follow_up": False,
        "impatience": False,
    }
    return Outcome(**(base | kw))


# --- epsilon_for ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("finance", HIGH_RISK_EPSILON),
        ("health", HIGH_RISK_EPSILON),
        ("legal", HIGH_RISK_EPSILON),
        ("creative", CREATIVE_EPSILON),
        ("general", DEFAULT_EPSILON),
        ("cooking", DEFAULT_EPSILON),
    ],
)
def test_epsilon_defaults(domain: str, expected: float) -> None:
    assert epsilon_for(domain) == expected


def test_epsilon_overrides_and_default_and_clamp() -> None:
    assert epsilon_for("finance", {"finance": 0.0}) == 0.0
    assert epsilon_for("cooking", {"cooking": 0.4}) == 0.4
    assert epsilon_for("cooking", {"finance": 0.4}, default=0.1) == 0.1
    assert epsilon_for("cooking", {"cooking": 1.7}) == 1.0
    assert epsilon_for("cooking", {"cooking": -0.2}) == 0.0
    assert epsilon_for("cooking", default=3.0) == 1.0


# --- explore -------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.2, 0.05, 0.3])
def test_explored_share_matches_epsilon(epsilon: float) -> None:
    rng = random.Random(1234)
    ranked = [_strategy("a"), _strategy("b"), _strategy("c")]
    n = 20_000
    explored = sum(explore(ranked, epsilon, rng).explored for _ in range(n))
    assert abs(explored / n - epsilon) <= 0.015


def test_zero_epsilon_never_explores() -> None:
    rng = random.Random(7)
    ranked = [_strategy("a"), _strategy("b")]
    for _ in range(5_000):
        choice = explore(ranked, 0.0, rng)
        assert not choice.explored
        assert choice.chosen == tuple(ranked)
        assert choice.skipped_id is None and choice.alternative_id is None


def test_not_exploring_keeps_ranked_order() -> None:
    ranked = [_strategy("a"), _strategy("b"), _strategy("c")]
    choice = explore(ranked, 0.0, random.Random(0))
    assert [s.id for s in choice.chosen] == ["a", "b", "c"]


def test_exploring_puts_alternative_first_and_keeps_others() -> None:
    ranked = [_strategy("a"), _strategy("b"), _strategy("c")]
    rng = random.Random(3)
    seen = set()
    for _ in range(200):
        choice = explore(ranked, 1.0, rng)
        assert choice.explored and choice.skipped_id == "a"
        ids = [s.id for s in choice.chosen]
        assert "a" not in ids
        if choice.alternative_id is None:
            assert ids == ["b", "c"]
        else:
            assert ids[0] == choice.alternative_id
            assert sorted(ids) == ["b", "c"]
        seen.add(choice.alternative_id)
    assert seen == {"b", "c", None}


def test_alternatives_are_roughly_uniform() -> None:
    ranked = [_strategy("a"), _strategy("b"), _strategy("c"), _strategy("d")]
    rng = random.Random(99)
    counts = Counter(explore(ranked, 1.0, rng).alternative_id for _ in range(12_000))
    assert set(counts) == {"b", "c", "d", None}
    for n in counts.values():  # four options, 3,000 expected each
        assert abs(n - 3_000) < 300


def test_never_selects_forbidden_or_redline_and_never_skips_redline_top() -> None:
    ranked = [
        _strategy("a"),
        _strategy("forbidden", zone="forbidden"),
        _strategy("redline", redline={"action": "replace"}),
        _strategy("ok", zone="caution"),
    ]
    rng = random.Random(5)
    for _ in range(2_000):
        choice = explore(ranked, 0.5, rng)
        assert choice.alternative_id in (None, "ok")
        assert all(s.id != "forbidden" for s in choice.chosen)
        assert any(s.id == "redline" for s in choice.chosen)

    redline_top = [_strategy("redline", redline=True), _strategy("b")]
    for _ in range(500):
        choice = explore(redline_top, 1.0, rng)
        assert not choice.explored
        assert [s.id for s in choice.chosen] == ["redline", "b"]


def test_forbidden_dropped_without_exploring() -> None:
    ranked = [_strategy("f", zone="forbidden"), _strategy("a"), _strategy("b")]
    choice = explore(ranked, 0.0, random.Random(0))
    assert [s.id for s in choice.chosen] == ["a", "b"]
    explored = explore(ranked, 1.0, random.Random(0))
    assert explored.skipped_id == "a"


def test_none_when_no_alternative() -> None:
    rng = random.Random(11)
    only = [_strategy("a")]
    for _ in range(100):
        assert explore(only, 1.0, rng) == Choice((), True, "a", None)
    only_ineligible = [_strategy("a"), _strategy("r", redline=True), _strategy("f", zone="forbidden")]
    choice = explore(only_ineligible, 1.0, rng)
    assert choice.explored and choice.alternative_id is None
    assert [s.id for s in choice.chosen] == ["r"]


def test_empty_ranked() -> None:
    choice = explore([], 1.0, random.Random(0))
    assert choice.chosen == () and not choice.explored


# --- reward --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, 0.6),
        ({"explicit": 1.0}, 1.0),
        ({"explicit": -1.0}, 0.0),
        ({"explicit": 1.0, "correction": True}, 1.0),
        ({"explicit": -1.0, "follow_up": True}, 0.0),
        ({"follow_up": True}, 0.8),
        ({"correction": True}, 0.1),
        ({"rephrase": True}, 0.3),
        ({"repeat": True}, 0.3),
        ({"impatience": True}, 0.4),
        ({"follow_up": True, "impatience": True}, 0.4),
        ({"correction": True, "rephrase": True}, 0.0),
        ({"correction": True, "rephrase": True, "repeat": True, "impatience": True}, 0.0),
        ({"rephrase": True, "repeat": True}, 0.0),
    ],
)
def test_reward_table(kw: dict[str, Any], expected: float) -> None:
    assert reward(_outcome(**kw)) == pytest.approx(expected)


def test_reward_in_unit_interval() -> None:
    flags = ("correction", "rephrase", "repeat", "follow_up", "impatience")
    for mask in range(32):
        value = reward(_outcome(**{f: bool(mask >> i & 1) for i, f in enumerate(flags)}))
        assert 0.0 <= value <= 1.0


# --- weights and stats ---------------------------------------------------------------------


def test_update_weight_formula() -> None:
    assert update_weight(0.5, 1.0, 0.6) == 0.54
    assert update_weight(0.5, 0.0, 0.6) == 0.44
    assert update_weight(0.5, 0.6, 0.6) == 0.5
    assert update_weight(0.5, 1.0, 0.5, lr=0.2) == 0.6


def test_update_weight_clamps() -> None:
    assert update_weight(0.98, 1.0, 0.0) == 1.0
    assert update_weight(0.02, 0.0, 1.0) == 0.0


def test_expected_reward_and_record_trial() -> None:
    assert expected_reward({}) == 0.5
    stats = record_trial({}, 1.0, explored=True)
    assert stats == {"trials": 1, "reward_sum": 1.0, "explored_trials": 1, "last_reward": 1.0}
    stats = record_trial(stats, 0.4, explored=False)
    assert stats["trials"] == 2 and stats["explored_trials"] == 1
    assert stats["reward_sum"] == pytest.approx(1.4)
    assert stats["last_reward"] == 0.4
    assert expected_reward(stats) == pytest.approx(0.7)


def test_record_trial_keeps_other_keys_and_input() -> None:
    before = {"trials": 3, "reward_sum": 1.5, "since": "2025-01-01"}
    after = record_trial(before, 0.6, explored=False)
    assert after["since"] == "2025-01-01" and after["explored_trials"] == 0
    assert before == {"trials": 3, "reward_sum": 1.5, "since": "2025-01-01"}


# --- A/B -----------------------------------------------------------------------------------


def _with_stats(id: str, trials: int, mean: float, **data: Any) -> MemoryRecord:
    return _strategy(id, stats={"trials": trials, "reward_sum": trials * mean}, **data)


def test_compare_not_enough_trials() -> None:
    result = compare(_with_stats("A", 4, 0.9), _with_stats("B", 12, 0.3))
    assert result.winner_id is None and result.loser_id is None
    assert result.trials == {"A": 4, "B": 12}
    assert "not enough trials" in result.reason and "A needs 6 more" in result.reason


def test_compare_no_stats_at_all() -> None:
    result = compare(_strategy("A"), _strategy("B"))
    assert (
        result == ABResult(None, None, {"A": 0.5, "B": 0.5}, {"A": 0, "B": 0}, result.reason)
        and "B needs 10 more" in result.reason
    )


def test_compare_clear_winner() -> None:
    result = compare(_with_stats("A", 12, 0.41), _with_stats("B", 14, 0.78))
    assert (result.winner_id, result.loser_id) == ("B", "A")
    assert result.means == {"A": pytest.approx(0.41), "B": pytest.approx(0.78)}
    assert result.reason == "A 0.41 over 12 trials vs B 0.78 over 14: keep B"


def test_compare_margin_too_small() -> None:
    result = compare(_with_stats("A", 20, 0.62), _with_stats("B", 20, 0.58))
    assert result.winner_id is None
    assert "margin 0.04 below 0.10" in result.reason


def test_compare_exact_margin_decides() -> None:
    result = compare(_with_stats("A", 10, 0.7), _with_stats("B", 10, 0.6))
    assert result.winner_id == "A"


def test_ab_pairs_grouping() -> None:
    trig = {"domains": ["cooking"], "keywords": ["Recipe", "dinner"]}
    same_trig = {"keywords": ["dinner", "recipe"], "domains": ["cooking"]}
    strategies = [
        _strategy("c", trigger=trig),
        _strategy("a", trigger=same_trig),
        _strategy("b", trigger=trig),
        _strategy("d", trigger=trig, scope="domain:cooking"),
        _strategy("e", trigger={**trig, "hours": [22, 6]}),
        _strategy("f", trigger=trig, redline=True),
        _strategy("g", trigger=trig, status="disabled"),
        _strategy("h", trigger=trig, zone="forbidden"),
        _strategy("x"),
        _strategy("y", trigger={}),
    ]
    pairs = [(p.id, q.id) for p, q in ab_pairs(strategies)]
    assert pairs == [("a", "b"), ("a", "c"), ("b", "c"), ("x", "y")]
