"""How well the learning works, from SQL: the learning curve per day or week, strategy usage.

Definitions (printed on the review UI's learning page):

- a **turn** is a user message tianma answered: an event with a reply or an error recorded
  (imported history is not a turn);
- **negative-signal rate** = negative signals (dislike, correction, resubmit, repeat, silence,
  impatience) recorded in the period ÷ turns in the period;
- **repeat rate** = ``repeat`` signals (a question already asked in another dialogue) ÷ turns;
- **hit rate** = turns with at least one injected memory, preference or strategy and no negative
  signal judging them ÷ turns.

The counting is pure (:func:`learning_curve`); :func:`load_learning_facts` reads its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Literal

from sqlalchemy import func, or_, select

from tianma.policies.credit import NEGATIVE
from tianma.storage import schema as t
from tianma.storage.protocols import MemoryStore
from tianma.storage.sql_store import map_sql_errors

Unit = Literal["day", "week"]
WEEKLY_AFTER_DAYS = 92
"""A curve spanning more days than this is counted per week (Monday to Sunday, local days)."""
MAX_BUCKETS = 400
"""At most this many (newest) periods are returned."""


@dataclass(frozen=True, slots=True)
class TurnFact:
    """One turn, as the curve needs it."""

    event_id: str
    at: datetime
    injected: bool
    """Something (memory, preference, strategy) was put in the turn's prompt."""


@dataclass(frozen=True, slots=True)
class SignalFact:
    """One signal, as the curve needs it."""

    type: str
    at: datetime
    target_event_id: str | None
    """The turn the signal judges."""


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """The counts of one period; rates are None for a period without turns."""

    start: date
    turns: int
    negative: int
    repeats: int
    hits: int

    @property
    def negative_rate(self) -> float | None:
        return self.negative / self.turns if self.turns else None

    @property
    def repeat_rate(self) -> float | None:
        return self.repeats / self.turns if self.turns else None

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.turns if self.turns else None


@dataclass(frozen=True, slots=True)
class Curve:
    """Consecutive periods, oldest first (periods without turns included, with no rates)."""

    unit: Unit
    points: tuple[CurvePoint, ...]

    @property
    def turns(self) -> int:
        return sum(p.turns for p in self.points)


def period_start(at: datetime | date, unit: Unit, zone: tzinfo = UTC) -> date:
    """The first day of the period holding ``at`` (its day in ``zone``; weeks start on Monday)."""
    day = at.astimezone(zone).date() if isinstance(at, datetime) else at
    return day - timedelta(days=day.weekday()) if unit == "week" else day


def choose_unit(first: date, last: date) -> Unit:
    """Days, or weeks when the span is longer than :data:`WEEKLY_AFTER_DAYS`."""
    return "week" if (last - first).days > WEEKLY_AFTER_DAYS else "day"


def negative_targets(signals: Iterable[SignalFact]) -> set[str]:
    """Turns judged by at least one negative signal."""
    return {s.target_event_id for s in signals if s.type in NEGATIVE and s.target_event_id}


def learning_curve(
    turns: Sequence[TurnFact], signals: Sequence[SignalFact], unit: Unit | None = None, *, zone: tzinfo = UTC
) -> Curve:
    """Negative-signal, repeat and hit counts per period (see the module docstring): per local
    day (or week) of ``zone``, the users' time zone.

    Signals count in the period they were recorded in; a turn is a hit when something was
    injected and no negative signal judges it, whenever that signal came.
    """
    days = [period_start(x.at, "day", zone) for x in turns] + [
        period_start(x.at, "day", zone) for x in signals
    ]
    if not days:
        return Curve(unit or "day", ())
    unit = unit or choose_unit(min(days), max(days))
    blamed = negative_targets(signals)
    counts: dict[date, list[int]] = {}

    def bucket(at: datetime) -> list[int]:
        return counts.setdefault(period_start(at, unit, zone), [0, 0, 0, 0])

    for turn in turns:
        row = bucket(turn.at)
        row[0] += 1
        row[3] += int(turn.injected and turn.event_id not in blamed)
    for signal in signals:
        if signal.type in NEGATIVE:
            bucket(signal.at)[1] += 1
        if signal.type == "repeat":
            bucket(signal.at)[2] += 1
    step = timedelta(days=7 if unit == "week" else 1)
    first, last = min(counts), max(counts)
    starts = []
    day = max(first, last - step * (MAX_BUCKETS - 1))
    while day <= last:
        starts.append(day)
        day += step
    points = tuple(CurvePoint(s, *counts.get(s, [0, 0, 0, 0])) for s in starts)
    return Curve(unit, points)


def load_learning_facts(
    store: MemoryStore, user_id: str, since: datetime | None = None
) -> tuple[list[TurnFact], list[SignalFact]]:
    """The user's turns and signals (since ``since``, if given), for :func:`learning_curve`."""
    r, i = t.records.c, t.injections.c
    turn_query = select(r.id, r.at).where(
        r.user_id == user_id,
        r.kind == "event",
        r.role == "user",
        or_(r.reply.is_not(None), r.error.is_not(None)),
    )
    signal_query = select(r.data, r.created_at).where(r.user_id == user_id, r.kind == "signal")
    if since is not None:
        turn_query = turn_query.where(r.at >= since)
        signal_query = signal_query.where(r.created_at >= since)
    with map_sql_errors(), store.tx.connect() as conn:
        injected = set(conn.execute(select(i.event_id).where(i.user_id == user_id).distinct()).scalars())
        turns = [TurnFact(eid, at, eid in injected) for eid, at in conn.execute(turn_query) if at is not None]
        signals = [
            SignalFact(str((data or {}).get("type", "")), at, (data or {}).get("target_event_id"))
            for data, at in conn.execute(signal_query)
        ]
    return turns, signals


@dataclass(frozen=True, slots=True)
class StrategyUsage:
    """How often a strategy was applied, explored, and judged negatively."""

    injected: int
    """Turns that applied it."""
    explored: int
    """Of those, turns where exploration put it first in place of the top strategy."""
    negative: int
    """Of those, turns judged by a negative signal."""


def strategy_usage(store: MemoryStore, user_id: str) -> dict[str, StrategyUsage]:
    """Per strategy id of the user: turns that applied it, explored it, and judged it badly."""
    r, i = t.records.c, t.injections.c
    with map_sql_errors(), store.tx.connect() as conn:
        rows = conn.execute(
            select(i.record_id, i.event_id, i.explored).where(i.user_id == user_id, i.role == "strategy")
        ).all()
        signals = conn.execute(select(r.data).where(r.user_id == user_id, r.kind == "signal")).scalars()
        blamed = {
            str(d["target_event_id"])
            for d in signals
            if d and d.get("type") in NEGATIVE and d.get("target_event_id")
        }
    usage: dict[str, list[int]] = {}
    for record_id, event_id, explored in rows:
        row = usage.setdefault(record_id, [0, 0, 0])
        row[0] += 1
        row[1] += int(bool(explored))
        row[2] += int(event_id in blamed)
    return {rid: StrategyUsage(*row) for rid, row in usage.items()}


def last_turn_at(store: MemoryStore, user_id: str) -> datetime | None:
    """When the user's latest turn happened (curves end there, not at the wall clock)."""
    r = t.records.c
    query = select(func.max(r.at)).where(
        r.user_id == user_id,
        r.kind == "event",
        r.role == "user",
        or_(r.reply.is_not(None), r.error.is_not(None)),
    )
    with map_sql_errors(), store.tx.connect() as conn:
        value = conn.execute(query).scalar()
    return None if value is None else t.as_aware(value)
