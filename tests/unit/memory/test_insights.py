"""The learning curve (pure counting, then from a real store) and strategy usage."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tianma.memory.insights import (
    SignalFact,
    TurnFact,
    choose_unit,
    last_turn_at,
    learning_curve,
    load_learning_facts,
    period_start,
    strategy_usage,
)
from tianma.storage.records import NewEvent, Provenance

T0 = datetime(2026, 5, 4, 9, tzinfo=UTC)  # a Monday


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


def test_rates_per_day_with_empty_days_kept() -> None:
    turns = [TurnFact("t1", at(0), True), TurnFact("t2", at(0.1), True), TurnFact("t3", at(2), False)]
    signals = [SignalFact("dislike", at(0.2), "t1"), SignalFact("repeat", at(2.1), "x"),
               SignalFact("like", at(2.2), "t3")]  # fmt: skip
    curve = learning_curve(turns, signals)
    assert curve.unit == "day" and [p.start for p in curve.points] == [date(2026, 5, d) for d in (4, 5, 6)]
    first, empty, third = curve.points
    assert (first.turns, first.negative, first.repeats, first.hits) == (2, 1, 0, 1)
    assert (first.negative_rate, first.repeat_rate, first.hit_rate) == (0.5, 0.0, 0.5)
    assert empty.turns == 0 and empty.hit_rate is None and empty.negative_rate is None
    assert (third.negative, third.repeats, third.hits, third.repeat_rate) == (
        1,
        1,
        0,
        1.0,
    )  # repeat is negative
    assert curve.turns == 3


def test_a_late_negative_signal_still_spoils_the_turns_hit() -> None:
    turns = [TurnFact("t1", at(0), True)]
    curve = learning_curve(turns, [SignalFact("correction", at(5), "t1")])
    assert curve.points[0].hits == 0 and curve.points[-1].negative == 1 and len(curve.points) == 6


def test_long_spans_are_counted_per_week() -> None:
    assert choose_unit(date(2026, 1, 1), date(2026, 3, 1)) == "day"
    assert choose_unit(date(2026, 1, 1), date(2026, 6, 1)) == "week"
    assert period_start(datetime(2026, 5, 10, tzinfo=UTC), "week") == date(2026, 5, 4)
    curve = learning_curve(
        [TurnFact("a", at(0), True), TurnFact("b", at(6), True), TurnFact("c", at(100), False)], []
    )
    assert curve.unit == "week" and curve.points[0].turns == 2 and curve.points[0].hit_rate == 1.0
    assert learning_curve([], []).points == ()


def test_facts_and_usage_from_a_real_store(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), policies={"epsilon": 0.0})
    strategy = rt.memory.store.add_record("u", "strategy", "先给结论", Provenance(source="test"), at=T0,
                                          data={"trigger": {"keywords": ["天气"]}, "weight": 0.8})  # fmt: skip
    first = rt.chat("u", "今天天气怎么样", dialogue_id="d1", at=T0)
    second = rt.chat("u", "明天天气呢", dialogue_id="d1", at=at(1))
    rt.feedback(second.event_id, "dislike", at=at(1))
    rt.ingest("u", [{"role": "user", "text": "以前的消息", "at": at(-3).isoformat(), "dialogue_id": "old"}])
    rt.memory.record_events(
        [NewEvent(user_id="other", role="user", text="x", at=at(1), dialogue_id="o", reply="y")]
    )
    turns, signals = load_learning_facts(rt.memory.store, "u")
    assert sorted(t.event_id for t in turns) == sorted([first.event_id, second.event_id])  # not the import
    assert all(t.injected for t in turns)
    assert ("dislike", second.event_id) in [(s.type, s.target_event_id) for s in signals]
    assert load_learning_facts(rt.memory.store, "u", since=at(0.5))[0][0].event_id == second.event_id
    assert last_turn_at(rt.memory.store, "u") == at(1) and last_turn_at(rt.memory.store, "nobody") is None
    usage = strategy_usage(rt.memory.store, "u")[strategy.id]
    assert (usage.injected, usage.explored, usage.negative) == (2, 0, 1)


def test_days_and_weeks_are_the_users_local_ones() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    evening, late = (
        datetime(2026, 5, 4, 9, tzinfo=UTC),
        datetime(2026, 5, 4, 17, tzinfo=UTC),
    )  # 17:00, 01:00 there
    turns = [TurnFact("a", evening, True), TurnFact("b", late, True)]
    assert [(p.start, p.turns) for p in learning_curve(turns, []).points] == [(date(2026, 5, 4), 2)]
    local = learning_curve(turns, [], zone=shanghai)
    assert [(p.start, p.turns) for p in local.points] == [(date(2026, 5, 4), 1), (date(2026, 5, 5), 1)]
    sunday_night_utc = datetime(2026, 5, 10, 20, tzinfo=UTC)  # Monday 04:00 in Beijing: a new week there
    assert period_start(sunday_night_utc, "week") == date(2026, 5, 4)
    assert period_start(sunday_night_utc, "week", shanghai) == date(2026, 5, 11)
