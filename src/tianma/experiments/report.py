"""How each arm of an online experiment did, from what the store already keeps.

Per arm: the units it served (users, or dialogues), its turns, and three rates with 95 %
intervals that resample whole units — the share of turns a negative signal was aimed at
(dislike, correction, a rephrase, a repeat …: :data:`~tianma.policies.credit.NEGATIVE`), the
share aimed at by a repeat or a rephrase alone, and the share of turns whose prompt carried a
memory or resident item (the ``injections`` table). Latency is read from the turn spans when the
local span store keeps them (median per arm, with a bootstrap interval over its turns).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, String, cast, select

from tianma.experiments.online import arm_names
from tianma.experiments.stats import Rate, cluster_rate, median_interval
from tianma.policies.credit import NEGATIVE
from tianma.storage import schema as t
from tianma.storage.experiments import Experiment
from tianma.storage.sql_store import map_sql_errors

REPEATS = frozenset({"repeat", "resubmit"})


@dataclass(frozen=True)
class ArmOutcome:
    arm: str
    units: int
    turns: int
    negative: Rate | None
    repeat: Rate | None
    memory_used: Rate | None
    latency_ms: float | None = None
    """Median turn duration from the span store; None when it keeps no span of the arm."""
    latency_interval: tuple[float, float] | None = None
    """95 % bootstrap interval of that median."""


@dataclass(frozen=True)
class ExperimentReport:
    experiment: Experiment
    arms: list[ArmOutcome] = field(default_factory=list)


def experiment_report(engine: Engine, exp: Experiment, durations: dict[str, list[float]] | None = None) -> ExperimentReport:
    """The outcomes of every arm of ``exp`` (``durations``: turn milliseconds per arm, from spans)."""
    r, i = t.records.c, t.injections.c
    marker = f'"name": "{exp.name}"'
    with map_sql_errors(), engine.connect() as conn:
        rows = conn.execute(select(r.id, r.user_id, r.dialogue_id, r.data).where(
            r.kind == "event", r.role == "user", cast(r.data, String).contains(marker))).all()  # fmt: skip
        events: dict[str, tuple[str, str]] = {}
        for event_id, user_id, dialogue_id, data in rows:
            tag = (data or {}).get("experiment") or {}
            if tag.get("name") == exp.name:
                unit = user_id if exp.unit == "user" else f"{user_id}/{dialogue_id}"
                events[event_id] = (str(tag.get("arm", "")), unit)
        users = sorted({u.split("/")[0] for _, u in events.values()})
        signals = conn.execute(select(r.data).where(r.kind == "signal", r.user_id.in_(users))).scalars().all() if users else []
        used = set(conn.execute(select(i.event_id).where(i.event_id.in_(list(events)))).scalars()) if events else set()
    negative: set[str] = set()
    repeated: set[str] = set()
    for data in signals:
        target = (data or {}).get("target_event_id")
        if target in events:
            kind = str((data or {}).get("type", ""))
            if kind in NEGATIVE:
                negative.add(target)
            if kind in REPEATS:
                repeated.add(target)
    per_arm: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0]))
    for event_id, (arm, unit) in events.items():
        c = per_arm[arm][unit]
        c[0] += 1
        c[1] += event_id in negative
        c[2] += event_id in repeated
        c[3] += event_id in used
    out = []
    for arm in arm_names(list(exp.arms)):
        units = per_arm.get(arm, {})
        turns = sum(c[0] for c in units.values())

        def rate(k: int, units: dict[str, list[int]] = units, turns: int = turns) -> Rate | None:
            return cluster_rate({u: (c[k], c[0]) for u, c in units.items()}) if turns else None

        ms = (durations or {}).get(arm) or []
        median, low, high = median_interval(ms) if ms else (None, None, None)
        interval = None if low is None or high is None else (low, high)
        out.append(ArmOutcome(arm, len(units), turns, rate(1), rate(2), rate(3), median, interval))
    return ExperimentReport(exp, out)


def describe(report: ExperimentReport) -> list[str]:
    """The report as lines of a table (English / Chinese headings)."""
    def pct(x: Rate | None) -> str:
        return "—" if x is None else f"{100 * x.rate:.1f} % [{100 * x.low:.1f}, {100 * x.high:.1f}]"

    exp = report.experiment
    state = "running" if exp.stopped_at is None else f"stopped {exp.stopped_at:%Y-%m-%d %H:%M}"
    lines = [f"experiment {exp.name} ({state}; by {exp.unit}; started {exp.started_at:%Y-%m-%d %H:%M})",
             "arm | units | turns | negative signal / 负反馈 | repeat / 重问 | memory used / 用到记忆 | latency p50"]  # fmt: skip
    for a in report.arms:
        latency = "—" if a.latency_ms is None else f"{a.latency_ms:.0f} ms"
        if a.latency_interval is not None:
            latency += f" [{a.latency_interval[0]:.0f}, {a.latency_interval[1]:.0f}]"
        lines.append(f"{a.arm} | {a.units} | {a.turns} | {pct(a.negative)} | {pct(a.repeat)} | {pct(a.memory_used)} | {latency}")
    return lines


def as_dict(report: ExperimentReport) -> dict[str, Any]:
    """Plain data for JSON."""
    def rate(x: Rate | None) -> dict[str, Any] | None:
        return None if x is None else {"rate": x.rate, "low": x.low, "high": x.high, "units": x.units, "turns": x.trials}

    return {"name": report.experiment.name, "arms": [
        {"arm": a.arm, "units": a.units, "turns": a.turns, "negative": rate(a.negative), "repeat": rate(a.repeat),
         "memory_used": rate(a.memory_used), "latency_ms": a.latency_ms,
         "latency_interval": a.latency_interval} for a in report.arms]}  # fmt: skip
