"""Operations of ``tianma reflect``, ``maintain`` and ``jobs``.

``jobs list`` and the first half of ``jobs due`` read the run log in SQL only; a job runs on the
runtime, opened only when one is due. Inside ``serve`` they run beside its own scheduler: every
slot is claimed in SQL first, so none runs twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tianma.operations.operation import Home, operation
from tianma.results import MaintenanceReport, ReflectionReport
from tianma.scheduler import JobRun, Period, Scheduler, builtin_jobs, due_jobs, is_due, next_slot
from tianma.storage import job_runs
from tianma.storage.schema import utcnow


@operation("learning.reflect")
def reflect(home: Home, user_id: str | None, dry_run: bool, trigger: str) -> list[ReflectionReport]:
    """Reflect on each user's (or one user's) messages since their last reflection (``Runtime.reflect``)."""
    return home.runtime().reflect(user_id, dry_run=dry_run, trigger=trigger)


@operation("learning.undo")
def undo_reflection(home: Home, run_id: str) -> list[str]:
    """Undo one whole reflection or maintenance run; the ids of the records restored."""
    return home.runtime().undo_reflection(run_id)


@operation("learning.maintain")
def maintain(home: Home) -> list[MaintenanceReport]:
    """Forgetting and the A/B decision for every user (``Runtime.maintain``)."""
    return home.runtime().maintain()


@dataclass(frozen=True, slots=True)
class JobState:
    """One enabled job as ``jobs list`` shows it."""

    name: str
    period: Period
    due: bool
    """Its current slot has not run (a continuous job: it has work pending)."""
    next_slot: datetime | None
    """The next slot after now; None for a continuous job."""
    last_started_at: datetime | None = None
    last_status: str | None = None
    last_error: str | None = None


@operation("jobs.list")
def list_jobs(home: Home) -> list[JobState]:
    """Each enabled job: whether it is due, its next slot, its last run (SQL only)."""
    engine = home.store.engine
    now = utcnow()
    states = []
    for job in builtin_jobs(home.settings):
        last = job_runs.last_run(engine, job.name)
        states.append(JobState(
            job.name, job.period, is_due(engine, job, now),
            None if job.period == "continuous" else next_slot(job, now),
            last["started_at"] if last else None, last["status"] if last else None, (last or {}).get("error"),
        ))  # fmt: skip
    return states


@operation("jobs.run")
def run_job(home: Home, name: str, force: bool = False) -> JobRun:
    """Run one job now: its current slot if not yet run, or (``force``) at once.

    Raises:
        InvalidInputError: no such enabled job.
    """
    return Scheduler(home.runtime()).run(name, force=force)


@operation("jobs.due")
def run_due(home: Home) -> list[JobRun]:
    """Run every job whose current slot has not run yet; none (and no runtime opened) when
    nothing is due."""
    due = due_jobs(home.store.engine, builtin_jobs(home.settings), utcnow())
    if not due:
        return []
    return Scheduler(home.runtime(), tuple(j for j, _ in due)).run_due()


@dataclass(frozen=True)
class QueueState:
    """The job table at a glance (``tianma jobs queue``)."""

    used: bool
    """Whether this home leaves work to the job table (``learning.queue``)."""
    counts: list[tuple[str, str, int]]
    """(kind, status, jobs), by kind then status."""
    failures: list[tuple[str, str, str]]
    """The last failed jobs: (key, finished at, error)."""


@operation("jobs.queue")
def queue_state(home: Home) -> QueueState:
    """What waits, runs, was done or failed in the job table."""
    from tianma.runtime_jobs import uses_job_table
    from tianma.storage import job_queue

    engine = home.store.engine
    failures = [(str(f["key"]), str(f["finished_at"] or ""), str(f["error"] or "")) for f in job_queue.recent_failures(engine)]
    counts = sorted((kind, status, n) for (kind, status), n in job_queue.tally(engine).items())
    return QueueState(uses_job_table(home.settings, engine), counts, failures)
