"""Scheduled jobs in the users' local time: slots per local day, across DST changes, in a zone
far from UTC, and once each through the real run log."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tianma import Runtime
from tianma.scheduler import Job, Scheduler, builtin_jobs, current_slot, next_slot
from tianma.settings import SchedulerSettings, Settings
from tianma.storage import job_runs

NEW_YORK = ZoneInfo("America/New_York")  # DST 2026: from Sunday 8 March 02:00, until Sunday 1 November 02:00
SHANGHAI = ZoneInfo("Asia/Shanghai")


def noop(rt: Runtime, now: datetime) -> dict[str, Any]:
    return {}


def slots_between(job: Job, start: datetime, end: datetime, step: timedelta) -> list[datetime]:
    """The distinct slots a poller every ``step`` from ``start`` to ``end`` would run."""
    seen: list[datetime] = []
    now = start
    while now < end:
        slot = current_slot(job, now)
        if not seen or slot != seen[-1]:
            seen.append(slot)
        now += step
    return seen


@pytest.mark.parametrize("hour", [3, 2])  # 02:00 does not exist on the day DST starts
def test_a_daily_slot_runs_once_per_local_day_across_the_spring_change(hour: int) -> None:
    job = Job("d", "daily", noop, at_hour=hour, zone=NEW_YORK)
    start = datetime(2026, 3, 5, 12, tzinfo=NEW_YORK)
    slots = slots_between(job, start, start + timedelta(days=5), timedelta(minutes=10))[1:]
    local = [s.astimezone(NEW_YORK) for s in slots]
    assert [d.date() for d in local] == [date(2026, 3, d) for d in (6, 7, 8, 9, 10)]  # one per day
    expected = [hour, hour, 3, hour, hour]  # the skipped 02:00 runs at the first instant after it
    assert [d.hour for d in local] == expected and all(d.minute == 0 for d in local)
    gaps = [(b - a) / timedelta(hours=1) for a, b in itertools.pairwise(slots)]
    assert gaps == ([24, 23, 24, 24] if hour == 3 else [24, 24, 23, 24])
    assert slots[2] == datetime(2026, 3, 8, 7, tzinfo=UTC)  # 03:00 EDT either way


def test_a_repeated_hour_in_autumn_runs_once() -> None:
    job = Job("d", "daily", noop, at_hour=1, zone=NEW_YORK)  # 01:00–02:00 happens twice on 1 November
    start = datetime(2026, 10, 31, 12, tzinfo=UTC)
    slots = slots_between(job, start, start + timedelta(days=2), timedelta(minutes=5))[1:]
    edt, est = datetime(2026, 11, 1, 5, tzinfo=UTC), datetime(2026, 11, 2, 6, tzinfo=UTC)
    assert slots == [edt, est]
    assert next_slot(job, datetime(2026, 11, 1, 6, 30, tzinfo=UTC)) == datetime(2026, 11, 2, 6, tzinfo=UTC)


def test_six_hourly_and_weekly_slots_follow_local_hours_through_the_change() -> None:
    six = Job("f", "6h", noop, at_hour=3, zone=NEW_YORK)
    day = [s.astimezone(NEW_YORK) for s in slots_between(
        six, datetime(2026, 3, 8, 0, tzinfo=NEW_YORK), datetime(2026, 3, 9, 0, tzinfo=NEW_YORK), timedelta(minutes=10)
    )]  # fmt: skip
    assert [(d.day, d.hour) for d in day] == [(7, 21), (8, 3), (8, 9), (8, 15), (8, 21)]
    weekly = Job("w", "weekly", noop, at_hour=3, weekday=6, zone=NEW_YORK)  # Sundays 03:00 local
    sundays = slots_between(weekly, datetime(2026, 3, 2, tzinfo=UTC), datetime(2026, 3, 23, tzinfo=UTC),
                            timedelta(hours=1))  # fmt: skip
    assert [s.astimezone(NEW_YORK).strftime("%a %d %H:%M") for s in sundays] == [
        "Sun 01 03:00", "Sun 08 03:00", "Sun 15 03:00", "Sun 22 03:00",
    ]  # fmt: skip


def test_the_built_jobs_run_at_local_hours_in_shanghai() -> None:
    settings = Settings(timezone="Asia/Shanghai", scheduler=SchedulerSettings(daily_hour=3, weekly_day=6))
    jobs = {j.name: j for j in builtin_jobs(settings)}
    now = datetime(2026, 3, 4, 20, tzinfo=UTC)  # Thursday 5 March, 04:00 in Beijing
    # 03:00 CST, not 03:00 UTC
    assert current_slot(jobs["decay"], now) == datetime(2026, 3, 4, 19, tzinfo=UTC)
    assert current_slot(jobs["decay"], now - timedelta(hours=2)) == datetime(2026, 3, 3, 19, tzinfo=UTC)
    assert current_slot(jobs["aggregate"], now).astimezone(SHANGHAI).hour == 3
    sunday = current_slot(jobs["behaviour_review"], now).astimezone(SHANGHAI)
    assert (sunday.weekday(), sunday.hour, sunday.date()) == (6, 3, date(2026, 3, 1))  # Saturday 19:00 UTC
    assert settings.zone_name == "Asia/Shanghai"


def test_the_default_zone_is_the_machines_with_its_dst_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    zone = Settings().zone
    assert datetime(2026, 1, 15, tzinfo=zone).utcoffset() == timedelta(hours=-5)
    assert datetime(2026, 7, 15, tzinfo=zone).utcoffset() == timedelta(hours=-4)  # not a fixed offset
    assert Settings().zone_name == "America/New_York" and Settings(timezone="UTC").zone_name == "UTC"


def test_a_poller_across_the_dst_change_runs_the_daily_job_once_a_day(
    make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder
) -> None:
    rt = make_runtime(embedder=char_embedder, timezone="America/New_York")
    ran: list[datetime] = []

    def record(rt: Runtime, now: datetime) -> dict[str, Any]:
        ran.append(now)
        return {}

    [decay] = [j for j in builtin_jobs(rt.settings) if j.name == "decay"]
    scheduler = Scheduler(rt, (Job("tick", "daily", record, at_hour=decay.at_hour, zone=decay.zone),))
    now = datetime(2026, 3, 6, 12, tzinfo=UTC)
    while now < datetime(2026, 3, 11, 12, tzinfo=UTC):
        scheduler.run_due(now)
        now += timedelta(minutes=20)
    local_days = Counter(at.astimezone(NEW_YORK).date() for at in ran)  # the 6th: caught up at once
    assert local_days == Counter({date(2026, 3, d): 1 for d in (6, 7, 8, 9, 10, 11)})
    slots = [r["slot"].astimezone(NEW_YORK) for r in job_runs.runs(rt.memory.store.engine, "tick")]
    assert {(s.hour, s.minute) for s in slots} == {(3, 0)} and len(slots) == 6
    assert ran[2] == datetime(2026, 3, 8, 7, tzinfo=UTC)  # 03:00 EDT, an hour earlier in UTC
