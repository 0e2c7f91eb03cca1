"""The periodic-jobs scheduler: slots, once-per-slot runs, races, failures, the poll loop."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tianma import ConfigError, Runtime, load_settings
from tianma.errors import InvalidInputError
from tianma.scheduler import Job, Scheduler, builtin_jobs, current_slot, due_slot, next_slot
from tianma.settings import SchedulerSettings, Settings
from tianma.storage import job_runs
from tianma.storage.records import NewEvent
from tianma.storage.sql_store import create_sql_engine

DAY = datetime(2026, 3, 4, tzinfo=UTC)  # a Wednesday


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return DAY + timedelta(days=day, hours=hour, minutes=minute)


def noop(rt: Runtime, now: datetime) -> dict[str, Any]:
    return {}


def test_daily_slot_turns_over_at_the_hour() -> None:
    job = Job("d", "daily", noop, at_hour=3)
    assert due_slot(job, at(0, 2, 59)) == at(-1, 3)
    assert due_slot(job, at(0, 3)) == at(0, 3)
    assert due_slot(job, at(0, 23, 59)) == at(0, 3)
    assert due_slot(job, at(0, 4), last_slot=at(0, 3)) is None
    assert due_slot(job, at(0, 4), last_slot=at(-1, 3)) == at(0, 3)
    assert next_slot(job, at(0, 4)) == at(1, 3)
    # naive times are UTC; other zones are converted
    assert current_slot(job, at(0, 3).replace(tzinfo=None)) == at(0, 3)
    assert current_slot(job, datetime(2026, 3, 4, 11, 30, tzinfo=timezone(timedelta(hours=8)))) == at(0, 3)


def test_weekly_slot_is_the_last_passed_weekday_hour() -> None:
    job = Job("w", "weekly", noop, at_hour=3, weekday=6)  # Sunday 03:00
    sunday = at(4, 3)
    assert sunday.weekday() == 6
    assert due_slot(job, sunday) == sunday
    assert due_slot(job, sunday - timedelta(minutes=1)) == sunday - timedelta(days=7)
    assert due_slot(job, at(0, 12)) == sunday - timedelta(days=7)
    assert due_slot(job, sunday + timedelta(days=6, hours=23)) == sunday
    assert next_slot(job, sunday) == sunday + timedelta(days=7)


def test_six_hour_slots_are_anchored_at_the_hour() -> None:
    job = Job("f", "6h", noop, at_hour=3)  # 03, 09, 15, 21
    assert due_slot(job, at(0, 2)) == at(-1, 21)
    assert due_slot(job, at(0, 3)) == at(0, 3)
    assert due_slot(job, at(0, 8, 59)) == at(0, 3)
    assert due_slot(job, at(0, 9)) == at(0, 9)
    assert due_slot(job, at(0, 23)) == at(0, 21)
    assert next_slot(job, at(0, 23)) == at(1, 3)


def test_a_bad_job_or_setting_is_refused(tmp_path: Any) -> None:
    with pytest.raises(InvalidInputError):
        Job("x", "hourly", noop)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        Job("x", "daily", noop, at_hour=24)
    with pytest.raises(ConfigError, match=r"scheduler\.daily_hour"):
        load_settings(home=tmp_path, scheduler={"daily_hour": 24})
    with pytest.raises(ConfigError, match=r"scheduler\.enabled_jobs"):
        load_settings(home=tmp_path, scheduler={"enabled_jobs": ["feedback"]})
    assert SchedulerSettings().enabled_jobs == [
        "decay", "aggregate", "reflection", "behaviour_review", "dialogue_end", "backup",
    ]  # fmt: skip


@pytest.fixture
def rt(make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder) -> Runtime:
    return make_runtime(embedder=char_embedder)


def test_builtin_jobs_run_once_per_slot(rt: Runtime, spans: InMemorySpanExporter) -> None:
    rt.chat("me", "我对花生过敏。", dialogue_id="d1", at=at(0, 10))
    scheduler = Scheduler(rt)
    assert [j.name for j in scheduler.jobs] == [
        "dialogue_end",
        "decay",
        "aggregate",
        "reflection",
        "behaviour_review",
    ]
    first = scheduler.run_due(at(1, 4))
    assert [(r.job, r.status, r.slot) for r in first] == [
        ("dialogue_end", "ok", at(1, 4)),  # continuous: the slot is the time it ran
        ("decay", "ok", at(1, 3)),
        ("aggregate", "ok", at(1, 3)),  # 6 h: 03, 09, 15, 21
        ("reflection", "ok", at(1, 3)),
        ("behaviour_review", "ok", at(-3, 3)),  # weekly: last Sunday 03:00
    ]
    assert first[0].report["dialogue_ids"] == ["d1"] and first[0].report["ended"] == 1
    assert first[3].report["users"] == 1 and len(first[3].report["run_ids"]) == 1
    again = scheduler.run_due(at(1, 8))
    assert [r.status for r in again] == ["idle"] + ["skipped"] * 4 and "already run" in str(again[1])
    assert "nothing to do" in str(again[0])
    late = scheduler.run_due(at(1, 23))  # only the 6-hourly job has a new slot (21:00)
    assert [(r.job, r.status, r.slot) for r in late if r.status == "ok"] == [("aggregate", "ok", at(1, 21))]
    assert [r.status for r in scheduler.run_due(at(2, 3))] == ["idle", "ok", "ok", "ok", "skipped"]
    rows = job_runs.runs(rt.memory.store.engine)
    assert [(r["job"], r["slot"], r["status"]) for r in rows] == [
        ("dialogue_end", at(1, 4), "ok"), ("decay", at(1, 3), "ok"), ("aggregate", at(1, 3), "ok"),
        ("reflection", at(1, 3), "ok"), ("behaviour_review", at(-3, 3), "ok"), ("aggregate", at(1, 21), "ok"),
        ("decay", at(2, 3), "ok"), ("aggregate", at(2, 3), "ok"), ("reflection", at(2, 3), "ok"),
    ]  # fmt: skip
    assert rows[3]["report"]["users"] == 1 and rows[1]["finished_at"] is not None
    job_spans = [s for s in spans.get_finished_spans() if s.name.startswith("tianma.job ")]
    assert {s.name for s in job_spans} == {
        "tianma.job dialogue_end",
        "tianma.job decay",
        "tianma.job aggregate",
        "tianma.job reflection",
        "tianma.job behaviour_review",
    }
    attrs = [s.attributes or {} for s in job_spans]  # an idle continuous job leaves no span
    assert [a["tianma.job.status"] for a in attrs] == (
        ["ok"] * 5 + ["skipped"] * 4 + ["skipped", "ok", "skipped", "skipped"] + ["ok"] * 3 + ["skipped"]
    )
    assert attrs[1]["tianma.job.name"] == "decay" and attrs[1]["tianma.job.slot"] == at(1, 3).isoformat()


def test_enabled_jobs_come_from_settings(
    make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder
) -> None:
    rt = make_runtime(embedder=char_embedder, scheduler={"enabled_jobs": ["decay"], "daily_hour": 5})
    scheduler = Scheduler(rt)
    assert [(j.name, j.at_hour) for j in scheduler.jobs] == [("decay", 5)]
    with pytest.raises(InvalidInputError, match="known jobs: decay"):
        scheduler.run("reflection", at(0, 6))


def test_the_aggregate_job_runs_every_six_hours_once_per_slot(
    make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder
) -> None:
    [job] = [
        j for j in builtin_jobs(Settings(scheduler=SchedulerSettings(daily_hour=5))) if j.name == "aggregate"
    ]
    assert (job.period, job.at_hour) == ("6h", 5)  # 05, 11, 17, 23
    assert current_slot(job, at(0, 4)) == at(-1, 23) and current_slot(job, at(0, 12)) == at(0, 11)
    rt = make_runtime(embedder=char_embedder)  # daily_hour 3: 03, 09, 15, 21
    (event,) = rt.memory.record_events([NewEvent("u", "user", "问题", at(0, 1), "d")])
    for minute in (1, 2):  # two weak negatives stored without being merged
        rt.memory.add_signal("u", "impatience", 0.4, target_event_id=event.id, source_event_id=None,
                             dialogue_id="d", at=at(0, 1, minute))  # fmt: skip
    scheduler = Scheduler(rt)

    first = scheduler.run("aggregate", at(0, 4))
    assert first.status == "ok" and first.slot == at(0, 3)
    assert {k: first.report[k] for k in ("users", "seen", "weak", "merged", "archived")} == {
        "users": 1, "seen": 2, "weak": 2, "merged": 1, "archived": 3,
    }  # fmt: skip
    (merged,) = [s for s in rt.memories("u", kind="signal") if s.data["type"] == "merged_negative"]
    assert first.report["merged_ids"] == [merged.id] and merged.confidence == 0.7
    assert scheduler.run("aggregate", at(0, 8, 59)).status == "skipped"  # same slot
    second = scheduler.run("aggregate", at(0, 9))
    assert second.status == "ok" and second.slot == at(0, 9)
    assert second.report["users"] == 0 and second.report["merged"] == 0  # nothing new to count
    assert [r["slot"] for r in job_runs.runs(rt.memory.store.engine, "aggregate")] == [at(0, 3), at(0, 9)]


def test_two_schedulers_racing_on_one_slot_run_it_once(rt: Runtime) -> None:
    calls: list[str] = []
    barrier = threading.Barrier(2)

    def slow(rt: Runtime, now: datetime) -> dict[str, Any]:
        calls.append(threading.current_thread().name)
        return {"n": len(calls)}

    job = Job("race", "daily", slow, at_hour=3)
    results: list[str] = []

    def go() -> None:
        scheduler = Scheduler(rt, (job,))
        barrier.wait()
        results.extend(r.status for r in scheduler.run_due(at(0, 4)))

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(results) == ["ok", "skipped"] and len(calls) == 1
    assert len(job_runs.runs(rt.memory.store.engine, "race")) == 1


def test_two_processes_claim_a_slot_once(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = create_sql_engine(url), create_sql_engine(url)  # as two processes would
    try:
        assert job_runs.claim(first, "decay", at(0, 3), at(0, 4)) is True
        assert job_runs.claim(second, "decay", at(0, 3), at(0, 4)) is False
        assert job_runs.claim(second, "decay", at(1, 3), at(1, 4)) is True
        assert job_runs.taken(first, "decay", at(1, 3))
    finally:
        first.dispose()
        second.dispose()


def test_a_failing_job_is_recorded_and_does_not_block_the_others(
    rt: Runtime, spans: InMemorySpanExporter
) -> None:
    def boom(rt: Runtime, now: datetime) -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    scheduler = Scheduler(rt, (Job("boom", "daily", boom, at_hour=3), Job("fine", "daily", noop, at_hour=3)))
    runs = scheduler.run_due(at(0, 5))
    assert [(r.job, r.status) for r in runs] == [("boom", "failed"), ("fine", "ok")]
    assert runs[0].error == "RuntimeError: disk on fire"
    (row,) = job_runs.runs(rt.memory.store.engine, "boom")
    assert row["status"] == "failed" and row["error"] == "RuntimeError: disk on fire"
    assert [r.status for r in scheduler.run_due(at(0, 6))] == [
        "skipped",
        "skipped",
    ]  # not retried in the slot
    (span,) = [s for s in spans.get_finished_spans() if s.name == "tianma.job boom"][:1]
    assert (span.attributes or {})["tianma.job.status"] == "failed" and not span.status.is_ok


def test_force_runs_again_and_unknown_names_list_the_known_ones(rt: Runtime) -> None:
    scheduler = Scheduler(rt)
    assert scheduler.run("decay", at(0, 4)).status == "ok"
    assert scheduler.run("decay", at(0, 5)).status == "skipped"
    forced = scheduler.run("decay", at(0, 5), force=True)
    assert forced.status == "ok" and forced.slot == at(0, 5)
    assert job_runs.last_run(rt.memory.store.engine, "decay")["slot"] == at(0, 5)  # type: ignore[index]
    with pytest.raises(InvalidInputError, match="known jobs: dialogue_end, decay, aggregate, reflection"):
        scheduler.run("feedback", at(0, 5))


def test_run_forever_polls_until_stopped(rt: Runtime) -> None:
    ran: list[datetime] = []
    ticks = iter(at(d, 4) for d in range(10_000))

    def record(rt: Runtime, now: datetime) -> dict[str, Any]:
        ran.append(now)
        return {}

    scheduler = Scheduler(rt, (Job("tick", "daily", record, at_hour=3),), clock=lambda: next(ticks))
    stop = threading.Event()
    loop = threading.Thread(target=scheduler.run_forever, args=(stop, 0.01))
    loop.start()
    deadline = datetime.now(UTC) + timedelta(seconds=5)
    while len(ran) < 3 and datetime.now(UTC) < deadline:
        threading.Event().wait(0.01)
    stop.set()
    loop.join(timeout=5)
    assert not loop.is_alive()
    assert len(ran) >= 3 and ran == sorted(set(ran)) and ran[0] == at(0, 4)  # one run per new day
