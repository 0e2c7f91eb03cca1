"""Periodic jobs: what runs when, and a run log that never runs a slot twice.

Built jobs (hours and days are local: ``Settings.timezone``, default this machine's zone):

- ``dialogue_end`` — continuously (every poll of ``serve``, every ``tianma jobs due``): a
  dialogue with no turn for ``serve.dialogue_idle_minutes`` ends, as of its last turn plus that
  limit, and its user's learning triggers fire (``Runtime.end_idle_dialogues``).
- ``decay`` — daily at ``scheduler.daily_hour``: ``Runtime.maintain`` (forgetting and the A/B
  decision between strategies).
- ``aggregate`` — every 6 h from the same hour (03, 09, 15, 21 by default): feedback aggregation,
  ``Runtime.aggregate_signals`` (``tianma.memory.signal_aggregation``): per dialogue, weak
  signals of one polarity seen twice or more merge into one credited signal; every signal
  looked at is archived, so none is counted twice.
- ``reflection`` — nightly, i.e. daily at the same hour: ``Runtime.reflect`` for every user
  with trigger ``nightly``.
- ``behaviour_review`` — weekly on ``scheduler.weekly_day`` at the same hour: the behaviour
  review of the past 7 days for every user (``tianma.memory.behaviour_review``), which queues
  behaviour-strategy proposals for review and applies nothing.

Every periodic job has one *slot* per period (e.g. daily at 03:00: today 03:00 once it is past,
else yesterday 03:00), in local time: a daily slot is once per local day, also on the days a
daylight-saving change makes 23 or 25 hours long (an hour the change skips runs at the first
instant after it, an hour it repeats runs the first time). Slots are stored as UTC. A run claims
its slot in the ``job_runs`` table by INSERT under a UNIQUE (job, slot) constraint, so two
processes (two cron lines, cron and ``serve``) or two threads never run the same slot. A slot
missed while nothing was running is caught up on the next call; older missed slots are not
replayed (one decay or reflection covers them). A run that crashed mid-way stays ``running`` and
its slot is not retried; the next slot runs normally.

A *continuous* job has no slots: it runs on every call that finds work for it (its ``pending``
check, a cheap SQL read); a run that changed something (its report's ``changed``) or failed is
logged with the time it ran as its slot. What keeps it from doing anything twice is its own
compare-and-set (a dialogue ends only while still open), not the log.
With the job table in use (``learning.queue``; PostgreSQL by default), the slot of each per-user
job (decay, aggregate, reflection, behaviour_review) is still claimed once here, and its run
enqueues one job per user in the job table (:mod:`tianma.runtime_jobs`) for ``tianma worker``
processes and the ``serve`` threads to take: the report says ``queued`` and how many users.
This module only decides and records; a process (cron via ``tianma jobs due``, ``tianma
serve``) calls it.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry.trace import Status, StatusCode
from sqlalchemy import Engine

from tianma.errors import InvalidInputError
from tianma.settings import Settings
from tianma.storage import job_runs
from tianma.storage.dialogue_ends import idle_dialogues
from tianma.storage.schema import as_aware, utcnow
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import tracer

if TYPE_CHECKING:
    from tianma.runtime import Runtime

logger = logging.getLogger("tianma.scheduler")

Period = Literal["daily", "6h", "weekly", "continuous"]
RunStatus = Literal["ok", "failed", "skipped", "idle"]
JOB_SPAN_PREFIX = "tianma.job "
ATTR_JOB_NAME = "tianma.job.name"
ATTR_JOB_SLOT = "tianma.job.slot"
ATTR_JOB_STATUS = "tianma.job.status"
PERIODS: tuple[Period, ...] = ("daily", "6h", "weekly", "continuous")
CHANGED = "changed"
"""Key of a continuous job's report: whether the run changed anything (else it is not logged)."""
_SEARCH_DAYS = 8
"""Local days either side of now searched for slots (a weekly slot is at most 7 days back)."""


@dataclass(frozen=True)
class Job:
    """A periodic job. ``at_hour`` anchors the slots in ``zone``: daily/weekly at that local hour,
    ``6h`` at that hour and every 6 h from it; ``weekday`` (0 = Monday) only matters for weekly.
    A ``continuous`` job has no slots; ``pending`` (engine, now) says whether it has work."""

    name: str
    period: Period
    run: Callable[[Runtime, datetime], dict[str, Any]] = field(compare=False, repr=False)
    at_hour: int = 0
    weekday: int = 0
    zone: tzinfo = field(default=UTC, compare=False)
    pending: Callable[[Engine, datetime], bool] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.period not in PERIODS:
            raise InvalidInputError(
                f"job {self.name}: period must be one of {', '.join(PERIODS)}, not {self.period!r}"
            )
        if not 0 <= self.at_hour <= 23 or not 0 <= self.weekday <= 6:
            raise InvalidInputError(f"job {self.name}: at_hour must be 0–23 and weekday 0–6")


@dataclass(frozen=True)
class JobRun:
    """What one attempt did: ``ok`` (with the job's report), ``failed`` (with the error),
    ``skipped`` (the slot was already claimed, here or by another process) or ``idle`` (a
    continuous job found nothing to do)."""

    job: str
    slot: datetime
    status: RunStatus
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def describe(self, zone: tzinfo = UTC) -> str:
        """One line: job, slot (in ``zone``, with its offset) and outcome."""
        why = {"ok": "ok", "failed": f"failed: {self.error}", "skipped": "skipped: already run",
               "idle": "nothing to do"}[self.status]  # fmt: skip
        return f"{self.job} [{self.slot.astimezone(zone).isoformat(timespec='seconds')}] {why}"

    def __str__(self) -> str:
        return self.describe()


def _local_slot(day: date, hour: int, zone: tzinfo) -> datetime:
    """``hour``:00 of a local day as aware UTC. An hour a DST change skips maps to the instant
    after the gap, a repeated hour to its first occurrence (``fold=0``)."""
    return datetime.combine(day, time(hour), tzinfo=zone).astimezone(UTC)


def _slots_near(job: Job, now: datetime) -> list[datetime]:
    """Every slot of ``job`` on the local days around ``now``, in order."""
    today = now.astimezone(job.zone).date()
    hours = sorted({(job.at_hour + 6 * k) % 24 for k in range(4)}) if job.period == "6h" else [job.at_hour]
    slots = []
    for offset in range(-_SEARCH_DAYS, _SEARCH_DAYS + 1):
        day = today + timedelta(days=offset)
        if job.period != "weekly" or day.weekday() == job.weekday:
            slots += [_local_slot(day, hour, job.zone) for hour in hours]
    return sorted(slots)


def current_slot(job: Job, now: datetime) -> datetime:
    """Start of the period slot ``now`` falls in (aware UTC); a continuous job's is ``now``."""
    now = as_aware(now)
    if job.period == "continuous":
        return now
    return max(s for s in _slots_near(job, now) if s <= now)


def due_slot(job: Job, now: datetime, last_slot: datetime | None = None) -> datetime | None:
    """The current slot, or ``None`` when ``last_slot`` (the slot last run) already covers it."""
    slot = current_slot(job, now)
    return None if last_slot is not None and as_aware(last_slot) >= slot else slot


def next_slot(job: Job, now: datetime) -> datetime:
    """Start of the slot after the current one (a continuous job's is ``now``: any poll)."""
    now = as_aware(now)
    if job.period == "continuous":
        return now
    return min(s for s in _slots_near(job, now) if s > now)


def _dialogue_end(rt: Runtime, at: datetime, idle: timedelta) -> dict[str, Any]:
    sweep = rt.end_idle_dialogues(at, idle)
    return {CHANGED: bool(sweep.ended), "ended": len(sweep.ended), "users": len({d.user_id for d in sweep.ended}),
            "dialogue_ids": [d.dialogue_id for d in sweep.ended],
            "reflections": {user: trigger for user, trigger in sweep.triggered}}  # fmt: skip


def _has_idle(engine: Engine, now: datetime, idle: timedelta) -> bool:
    return bool(idle_dialogues(engine, as_aware(now) - idle, limit=1))


def _queued(rt: Runtime, kind: str, at: datetime, **extra: Any) -> dict[str, Any] | None:
    """With the job table in use, the per-user work of a slot goes to the queue: one job per
    user, taken by any worker (:mod:`tianma.runtime_jobs`); ``None`` when it runs here."""
    if not rt.job_table:
        return None
    return {"users": rt.queue_per_user(kind, at, **extra), "queued": True}


def _decay(rt: Runtime, at: datetime) -> dict[str, Any]:
    if (queued := _queued(rt, "decay", at)) is not None:
        return {**queued, "windows_dropped": rt.drop_old_windows(at), "jobs_pruned": rt.prune_jobs(at)}
    reports = rt.maintain(at)
    return {"users": len(reports), "run_ids": [r.run_id for r in reports],
            "decayed": sum(len(r.decayed) for r in reports),
            "inactive": sum(len(r.inactive) for r in reports), "ab": sum(len(r.ab) for r in reports),
            "windows_dropped": rt.drop_old_windows(at)}  # fmt: skip


def _aggregate(rt: Runtime, at: datetime) -> dict[str, Any]:
    if (queued := _queued(rt, "aggregate", at)) is not None:
        return queued
    reports = rt.aggregate_signals(at)
    return {"users": len(reports), "seen": sum(r.seen for r in reports),
            "weak": sum(r.weak for r in reports), "merged": sum(len(r.merged) for r in reports),
            "archived": sum(r.archived for r in reports),
            "merged_ids": [m for r in reports for m in r.merged]}  # fmt: skip


def _reflection(rt: Runtime, at: datetime) -> dict[str, Any]:
    if (queued := _queued(rt, "reflection", at, trigger="nightly")) is not None:
        return queued
    reports = rt.reflect(None, at, trigger="nightly")
    return {"users": len(reports), "run_ids": [r.run_id for r in reports],
            "items": sum(len(r.items) for r in reports)}  # fmt: skip


def _behaviour_review(rt: Runtime, at: datetime) -> dict[str, Any]:
    if (fanned := _queued(rt, "behaviour_review", at)) is not None:
        return fanned
    reports = rt.weekly_review(None, at)  # under the memory lock, one user at a time
    queued = [p for r in reports for p in r.proposals if p.status == "queued"]
    return {"users": len(reports), "run_ids": [r.run_id for r in reports if r.run_id],
            "topics": sum(len(r.topics) for r in reports), "proposals": len(queued),
            "review_ids": [p.review_id for p in queued]}  # fmt: skip


def _backup(rt: Runtime, at: datetime) -> dict[str, Any]:
    from tianma.backups import daily_backup

    return daily_backup(rt.settings, at)


def builtin_jobs(settings: Settings) -> tuple[Job, ...]:
    """The enabled built-in jobs, timed by the settings in their local zone (idle dialogues end
    first, so the others see them finished; decay, then feedback aggregation, before
    reflection, so it sees the merged signals; the weekly review after them: it reads the week
    the others have just settled; the backup, when ``backup.folder`` is set, last)."""
    sched, zone = settings.scheduler, settings.zone
    idle = timedelta(minutes=settings.serve.dialogue_idle_minutes)
    built = (
        Job("dialogue_end", "continuous", functools.partial(_dialogue_end, idle=idle), zone=zone,
            pending=functools.partial(_has_idle, idle=idle)),
        Job("decay", "daily", _decay, at_hour=sched.daily_hour, zone=zone),
        Job("aggregate", "6h", _aggregate, at_hour=sched.daily_hour, zone=zone),
        Job("reflection", "daily", _reflection, at_hour=sched.daily_hour, zone=zone),
        Job("behaviour_review", "weekly", _behaviour_review, at_hour=sched.daily_hour,
            weekday=sched.weekly_day, zone=zone),
        Job("backup", "daily", _backup, at_hour=sched.daily_hour, zone=zone),  # last: the night's work in it
    )  # fmt: skip
    return tuple(j for j in built if j.name in sched.enabled_jobs and (j.name != "backup" or settings.backup.folder))


def is_due(engine: Engine, job: Job, now: datetime) -> bool:
    """Whether ``job`` would run at ``now``: its current slot is unclaimed, or (continuous) it
    has work pending. A read-only check: no Runtime needed."""
    if job.period == "continuous":
        return job.pending is None or job.pending(engine, as_aware(now))
    return not job_runs.taken(engine, job.name, current_slot(job, now))


def due_jobs(engine: Engine, jobs: tuple[Job, ...], now: datetime) -> list[tuple[Job, datetime]]:
    """Jobs that would run at ``now``, with their slots (see :func:`is_due`)."""
    return [(j, current_slot(j, now)) for j in jobs if is_due(engine, j, now)]


class Scheduler:
    """Runs due jobs against one Runtime, recording each run in ``job_runs``.

    Args:
        rt: the runtime the jobs act on (its SQL store also holds the run log).
        jobs: ``None`` = the built-in jobs enabled in ``rt.settings.scheduler``.
        clock: current time (aware); ``None`` = the real clock. Tests pass a fake one.
    """

    def __init__(
        self, rt: Runtime, jobs: tuple[Job, ...] | None = None, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.rt = rt
        self.jobs = builtin_jobs(rt.settings) if jobs is None else tuple(jobs)
        self.clock = clock or utcnow
        self._engine = rt.store.engine

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
        """Run every job whose current slot has not run yet (and every continuous job with work
        pending), one after the other.

        A failing job is recorded as failed and does not stop the others.
        """
        now = as_aware(now if now is not None else self.clock())
        return [self._run(j, current_slot(j, now), now) for j in self.jobs]

    def run(self, name: str, now: datetime | None = None, force: bool = False) -> JobRun:
        """Run one job: its current slot if not yet run, or (``force``) at once, as slot ``now``
        (a continuous job: if it has work pending, or with ``force`` anyway).

        Raises:
            InvalidInputError: unknown job name.
        """
        job = self.job(name)
        now = as_aware(now if now is not None else self.clock())
        return self._run(job, now if force else current_slot(job, now), now, force)

    def run_forever(self, stop: threading.Event, poll_s: float = 60) -> None:
        """Call ``run_due`` every ``poll_s`` seconds until ``stop`` is set (for ``serve``)."""
        while not stop.is_set():
            try:
                self.run_due()
            except Exception:  # a store error must not end the loop; the next poll retries
                logger.exception("scheduler poll failed")
            stop.wait(poll_s)

    def _run(self, job: Job, slot: datetime, now: datetime, force: bool = False) -> JobRun:
        continuous = job.period == "continuous"
        if continuous and not force and not is_due(self._engine, job, now):
            return JobRun(job.name, slot, "idle")  # no span, no log row: it polls every minute
        with tracer.start_as_current_span(JOB_SPAN_PREFIX + job.name) as span:
            span.set_attribute(ATTR_JOB_NAME, job.name)
            span.set_attribute(ATTR_JOB_SLOT, slot.isoformat())
            # a slot is claimed before it runs; a continuous run (its own compare-and-set keeps it
            # from doing anything twice) is logged after, and only when it changed something
            if not continuous and not job_runs.claim(self._engine, job.name, slot, now):
                span.set_attribute(ATTR_JOB_STATUS, "skipped")
                logger.debug("job %s slot %s skipped: already run", job.name, slot.isoformat())
                return JobRun(job.name, slot, "skipped")
            logger.log(logging.DEBUG if continuous else logging.INFO, "job %s slot %s started", job.name,
                       slot.isoformat())  # fmt: skip
            try:
                report = job.run(self.rt, now)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                self._log(job, slot, now, "failed", error, None)
                span.set_attribute(ATTR_JOB_STATUS, "failed")
                span.set_attribute(sc.ERROR_TYPE, type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, error))
                logger.exception("job %s slot %s failed", job.name, slot.isoformat())
                return JobRun(job.name, slot, "failed", error=error)
            span.set_attribute(ATTR_JOB_STATUS, "ok")
            if continuous and not report.get(CHANGED, True):
                return JobRun(job.name, slot, "ok", report=report)
            self._log(job, slot, now, "ok", None, report)
            logger.info("job %s slot %s ok: %s", job.name, slot.isoformat(), report)
            return JobRun(job.name, slot, "ok", report=report)

    def _log(
        self,
        job: Job,
        slot: datetime,
        now: datetime,
        status: str,
        error: str | None,
        report: dict[str, Any] | None,
    ) -> None:
        """Close the run in the log (a continuous run is first entered, with its time as slot)."""
        if job.period == "continuous" and not job_runs.claim(self._engine, job.name, slot, now):
            return  # another process logged a run of the same instant
        job_runs.finish(self._engine, job.name, slot, self.clock(), status, error, report)
