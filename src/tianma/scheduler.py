"""Periodic jobs (DESIGN.md §6): what runs when, and a run log that never runs a slot twice.

Built jobs:

- ``decay`` — daily at ``scheduler.daily_hour`` (UTC): ``Runtime.maintain`` (forgetting and
  the A/B decision between strategies).
- ``aggregate`` — every 6 h from the same hour (03, 09, 15, 21 by default): feedback aggregation,
  ``Runtime.aggregate_signals`` (``tianma.memory.signal_aggregation``): per dialogue, weak
  signals of one polarity seen twice or more merge into one credited signal; every signal
  looked at is archived, so none is counted twice.
- ``reflection`` — nightly, i.e. daily at the same hour: ``Runtime.reflect`` for every user
  with trigger ``nightly``.
- ``behaviour_review`` — weekly on ``scheduler.weekly_day`` at the same hour: the behaviour
  review of the past 7 days for every user (``tianma.memory.behaviour_review``), which queues
  behaviour-strategy proposals for review and applies nothing.

Every job has one *slot* per period (e.g. daily at 03:00: today 03:00 once it is past, else
yesterday 03:00). A run claims its slot in the ``job_runs`` table by INSERT under a UNIQUE
(job, slot) constraint, so two processes (two cron lines, cron and ``serve``) or two threads
never run the same slot. A slot missed while nothing was running is caught up on the next
call; older missed slots are not replayed (one decay or reflection covers them). A run that
crashed mid-way stays ``running`` and its slot is not retried; the next slot runs normally.
This module only decides and records; a process (cron via ``tianma jobs due``, later
``tianma serve``) calls it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry.trace import Status, StatusCode
from sqlalchemy import Engine

from tianma.errors import InvalidInputError
from tianma.memory import job_runs
from tianma.memory.behaviour_review import weekly_review
from tianma.memory.schema import as_aware, utcnow
from tianma.settings import SchedulerSettings
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import tracer

if TYPE_CHECKING:
    from tianma.runtime import Runtime

logger = logging.getLogger("tianma.scheduler")

Period = Literal["daily", "6h", "weekly"]
RunStatus = Literal["ok", "failed", "skipped"]
JOB_SPAN_PREFIX = "tianma.job "
ATTR_JOB_NAME = "tianma.job.name"
ATTR_JOB_SLOT = "tianma.job.slot"
ATTR_JOB_STATUS = "tianma.job.status"
_PERIODS: dict[str, timedelta] = {"daily": timedelta(days=1), "6h": timedelta(hours=6),
                                  "weekly": timedelta(days=7)}  # fmt: skip


@dataclass(frozen=True)
class Job:
    """A periodic job. ``at_hour`` (UTC) anchors the slots: daily/weekly at that hour, ``6h``
    at that hour and every 6 h from it; ``weekday`` (0 = Monday) only matters for weekly."""

    name: str
    period: Period
    run: Callable[[Runtime, datetime], dict[str, Any]] = field(compare=False, repr=False)
    at_hour: int = 0
    weekday: int = 0

    def __post_init__(self) -> None:
        if self.period not in _PERIODS:
            raise InvalidInputError(
                f"job {self.name}: period must be daily, 6h or weekly, not {self.period!r}"
            )
        if not 0 <= self.at_hour <= 23 or not 0 <= self.weekday <= 6:
            raise InvalidInputError(f"job {self.name}: at_hour must be 0–23 and weekday 0–6")


@dataclass(frozen=True)
class JobRun:
    """What one attempt did: ``ok`` (with the job's report), ``failed`` (with the error) or
    ``skipped`` (the slot was already claimed, here or by another process)."""

    job: str
    slot: datetime
    status: RunStatus
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def __str__(self) -> str:
        why = {"ok": "ok", "failed": f"failed: {self.error}", "skipped": "skipped: already run"}[self.status]
        return f"{self.job} [{self.slot.isoformat()}] {why}"


def current_slot(job: Job, now: datetime) -> datetime:
    """Start of the period slot ``now`` falls in (aware UTC)."""
    now = as_aware(now)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if job.period == "6h":
        offset = job.at_hour % 6
        return day + timedelta(hours=((now.hour - offset) // 6) * 6 + offset)
    slot = day + timedelta(hours=job.at_hour)
    if job.period == "weekly":
        slot -= timedelta(days=(now.weekday() - job.weekday) % 7)
    return slot if slot <= now else slot - _PERIODS[job.period]


def due_slot(job: Job, now: datetime, last_slot: datetime | None = None) -> datetime | None:
    """The current slot, or ``None`` when ``last_slot`` (the slot last run) already covers it."""
    slot = current_slot(job, now)
    return None if last_slot is not None and as_aware(last_slot) >= slot else slot


def next_slot(job: Job, now: datetime) -> datetime:
    """Start of the slot after the current one."""
    return current_slot(job, now) + _PERIODS[job.period]


def _decay(rt: Runtime, at: datetime) -> dict[str, Any]:
    reports = rt.maintain(at)
    return {"users": len(reports), "run_ids": [r["run_id"] for r in reports],
            "decayed": sum(len(r["decayed"]) for r in reports),
            "inactive": sum(len(r["inactive"]) for r in reports), "ab": sum(len(r["ab"]) for r in reports)}  # fmt: skip


def _aggregate(rt: Runtime, at: datetime) -> dict[str, Any]:
    reports = rt.aggregate_signals(at)
    return {"users": len(reports), "seen": sum(r["seen"] for r in reports),
            "weak": sum(r["weak"] for r in reports), "merged": sum(len(r["merged"]) for r in reports),
            "archived": sum(r["archived"] for r in reports),
            "merged_ids": [m for r in reports for m in r["merged"]]}  # fmt: skip


def _reflection(rt: Runtime, at: datetime) -> dict[str, Any]:
    reports = rt.reflect(None, at, trigger="nightly")
    return {"users": len(reports), "run_ids": [r["run_id"] for r in reports],
            "items": sum(len(r["items"]) for r in reports)}  # fmt: skip


def _behaviour_review(rt: Runtime, at: datetime) -> dict[str, Any]:
    reports = weekly_review(rt.memory, rt.constitution, None, at)
    queued = [p for r in reports for p in r["proposals"] if p["status"] == "queued"]
    return {"users": len(reports), "run_ids": [r["run_id"] for r in reports if r["run_id"]],
            "topics": sum(len(r["topics"]) for r in reports), "proposals": len(queued),
            "review_ids": [p["review_id"] for p in queued]}  # fmt: skip


def builtin_jobs(settings: SchedulerSettings) -> tuple[Job, ...]:
    """The enabled built-in jobs, timed by the settings (decay, then feedback aggregation, before
    reflection, so it sees the merged signals; the weekly review last: it reads the week the
    others have just settled)."""
    built = (
        Job("decay", "daily", _decay, at_hour=settings.daily_hour),
        Job("aggregate", "6h", _aggregate, at_hour=settings.daily_hour),
        Job("reflection", "daily", _reflection, at_hour=settings.daily_hour),
        Job("behaviour_review", "weekly", _behaviour_review, at_hour=settings.daily_hour,
            weekday=settings.weekly_day),
    )  # fmt: skip
    return tuple(j for j in built if j.name in settings.enabled_jobs)


def due_jobs(engine: Engine, jobs: tuple[Job, ...], now: datetime) -> list[tuple[Job, datetime]]:
    """Jobs whose current slot nobody has claimed yet (a read-only check: no Runtime needed)."""
    return [(j, s) for j in jobs if not job_runs.taken(engine, j.name, s := current_slot(j, now))]


class Scheduler:
    """Runs due jobs against one Runtime, recording each run in ``job_runs``.

    Args:
        rt: the runtime the jobs act on (its SQL store also holds the run log).
        jobs: ``None`` = the built-in jobs enabled in ``rt.settings.scheduler``.
        clock: current time (aware); ``None`` = the real UTC clock. Tests pass a fake one.
    """

    def __init__(
        self, rt: Runtime, jobs: tuple[Job, ...] | None = None, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.rt = rt
        self.jobs = builtin_jobs(rt.settings.scheduler) if jobs is None else tuple(jobs)
        self.clock = clock or utcnow
        self._engine = rt.memory.store.engine

    def job(self, name: str) -> Job:
        """The job called ``name``.

        Raises:
            InvalidInputError: no such (enabled) job; the message lists the known ones.
        """
        for j in self.jobs:
            if j.name == name:
                return j
        known = ", ".join(j.name for j in self.jobs) or "none"
        raise InvalidInputError(f"unknown job {name!r} / 没有这个任务; known jobs: {known}")

    def run_due(self, now: datetime | None = None) -> list[JobRun]:
        """Run every job whose current slot has not run yet, one after the other.

        A failing job is recorded as failed and does not stop the others.
        """
        now = as_aware(now if now is not None else self.clock())
        return [self._run(j, current_slot(j, now), now) for j in self.jobs]

    def run(self, name: str, now: datetime | None = None, force: bool = False) -> JobRun:
        """Run one job: its current slot if not yet run, or (``force``) at once, as slot ``now``.

        Raises:
            InvalidInputError: unknown job name.
        """
        job = self.job(name)
        now = as_aware(now if now is not None else self.clock())
        return self._run(job, now if force else current_slot(job, now), now)

    def run_forever(self, stop: threading.Event, poll_s: float = 60) -> None:
        """Call ``run_due`` every ``poll_s`` seconds until ``stop`` is set (for ``serve``)."""
        while not stop.is_set():
            try:
                self.run_due()
            except Exception:  # a store error must not end the loop; the next poll retries
                logger.exception("scheduler poll failed")
            stop.wait(poll_s)

    def _run(self, job: Job, slot: datetime, now: datetime) -> JobRun:
        with tracer.start_as_current_span(JOB_SPAN_PREFIX + job.name) as span:
            span.set_attribute(ATTR_JOB_NAME, job.name)
            span.set_attribute(ATTR_JOB_SLOT, slot.isoformat())
            if not job_runs.claim(self._engine, job.name, slot, now):
                span.set_attribute(ATTR_JOB_STATUS, "skipped")
                logger.debug("job %s slot %s skipped: already run", job.name, slot.isoformat())
                return JobRun(job.name, slot, "skipped")
            logger.info("job %s slot %s started", job.name, slot.isoformat())
            try:
                report = job.run(self.rt, now)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                job_runs.finish(self._engine, job.name, slot, self.clock(), "failed", error, None)
                span.set_attribute(ATTR_JOB_STATUS, "failed")
                span.set_attribute(sc.ERROR_TYPE, type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, error))
                logger.exception("job %s slot %s failed", job.name, slot.isoformat())
                return JobRun(job.name, slot, "failed", error=error)
            job_runs.finish(self._engine, job.name, slot, self.clock(), "ok", None, report)
            span.set_attribute(ATTR_JOB_STATUS, "ok")
            logger.info("job %s slot %s ok: %s", job.name, slot.isoformat(), report)
            return JobRun(job.name, slot, "ok", report=report)
