"""The job queue in the SQL store: work that a ``serve`` process asks for and any process runs —
a worker thread beside it, or ``tianma worker`` processes on the same database.

- :func:`enqueue` adds a pending job, or joins the pending one with the same key (a user's
  reflection asked for again while it waits is one run: it covers everything since the last).
- :func:`claim` takes the oldest due job in one statement — ``FOR UPDATE SKIP LOCKED`` on
  PostgreSQL, so workers never wait for each other; SQLite runs one writer at a time anyway —
  and never a job whose user already has a job of its kind running: one user's reflection never
  runs twice at once. A claim is a lease: a worker that dies (``kill -9``) stops renewing it, and
  once it expires the job is pending again (or dropped, when a newer pending job of its key
  covers it).
- :func:`finish` closes a job ``done``; :func:`fail` puts it back with a backoff, or ``failed``
  after :data:`MAX_ATTEMPTS`. Both only touch a job the caller still holds.

No lock files, no leader: the database's row locks and its partial unique index on pending keys
are the coordination.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, exists, func, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import aliased

from tianma.storage import schema as t
from tianma.storage.sql_store import map_sql_errors

LEASE = timedelta(minutes=10)
"""How long a claim holds a job without renewal (a reflection on a CPU model may take minutes)."""
MAX_ATTEMPTS = 5
"""Tries before a job is left ``failed``."""
BACKOFF = timedelta(seconds=30)
"""The wait before the second try; it doubles after each failure (30 s, 1 min, 2 min, 4 min)."""


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed job."""

    id: int
    kind: str
    key: str
    user_id: str | None
    payload: dict[str, Any]
    attempts: int
    """This claim included."""
    worker: str
    lease_until: datetime


def enqueue(engine: Engine, kind: str, key: str, payload: dict[str, Any], *, user_id: str | None,
            at: datetime) -> None:  # fmt: skip
    """Add a pending job, due now; a pending job with the same ``key`` takes this ``payload``
    instead (the newer ask covers the older one) and stays where it is in the queue."""
    values = {"kind": kind, "key": key, "user_id": user_id, "payload": t.plain(payload), "status": "pending",
              "attempts": 0, "run_after": at, "created_at": at}  # fmt: skip
    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(t.jobs).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[t.jobs.c.key], index_where=text("status = 'pending'"),  # literal: the partial index's
        set_={"payload": stmt.excluded.payload},
    )  # fmt: skip
    with map_sql_errors(), engine.begin() as conn:
        conn.execute(stmt)


def claim(engine: Engine, worker: str, at: datetime, *, kinds: tuple[str, ...] | None = None,
          lease: timedelta = LEASE) -> Job | None:  # fmt: skip
    """The oldest due job, now leased to ``worker`` until ``at + lease``; ``None`` when none is
    due. Expired leases are returned to the queue first."""
    with map_sql_errors(), engine.begin() as conn:
        _reap(conn, at)
        j, busy = t.jobs, aliased(t.jobs)
        running_for_user = exists().where(
            busy.c.user_id == j.c.user_id, busy.c.kind == j.c.kind, busy.c.status == "running"
        )
        due = select(j.c.id).where(j.c.status == "pending", j.c.run_after <= at, ~running_for_user)
        if kinds is not None:
            due = due.where(j.c.kind.in_(kinds))
        due = due.order_by(j.c.run_after, j.c.id).limit(1).with_for_update(skip_locked=True)
        until = at + lease
        row = conn.execute(
            update(j)
            .where(j.c.id == due.scalar_subquery())
            .values(status="running", worker=worker, lease_until=until, attempts=j.c.attempts + 1)
            .returning(j.c.id, j.c.kind, j.c.key, j.c.user_id, j.c.payload, j.c.attempts)
        ).first()
    if row is None:
        return None
    return Job(int(row.id), row.kind, row.key, row.user_id, dict(row.payload), int(row.attempts), worker, until)


def _reap(conn: Any, at: datetime) -> None:
    """Expired leases: pending again, or ``failed`` when a pending job of the same key covers it."""
    j = t.jobs
    expired = conn.execute(
        select(j.c.id, j.c.key).where(j.c.status == "running", j.c.lease_until < at).order_by(j.c.id)
    ).all()
    for job_id, key in expired:
        covered = conn.execute(select(func.count()).where(j.c.key == key, j.c.status == "pending")).scalar_one()
        values: dict[str, Any] = (
            {"status": "failed", "finished_at": at, "error": "lease expired; a newer ask covers it"}
            if covered
            else {"status": "pending", "run_after": at, "error": "lease expired (the worker stopped)"}
        )
        still = (j.c.id == job_id, j.c.status == "running", j.c.lease_until < at)  # not reaped meanwhile
        conn.execute(update(j).where(*still).values(worker=None, lease_until=None, **values))


def renew(engine: Engine, job: Job, at: datetime, lease: timedelta = LEASE) -> bool:
    """Extend the lease of a long job; ``False`` when it is no longer the caller's."""
    with map_sql_errors(), engine.begin() as conn:
        done = conn.execute(_held(job).values(lease_until=at + lease))
    return done.rowcount == 1


def finish(engine: Engine, job: Job, at: datetime, result: dict[str, Any] | None = None) -> bool:
    """Close a job ``done``; ``False`` when its lease had passed to someone else."""
    with map_sql_errors(), engine.begin() as conn:
        done = conn.execute(_held(job).values(status="done", finished_at=at, lease_until=None,
                                              result=None if result is None else t.plain(result)))  # fmt: skip
    return done.rowcount == 1


def fail(engine: Engine, job: Job, at: datetime, error: str) -> bool:
    """Put a job back with a backoff (:data:`BACKOFF` doubled per earlier try), or leave it
    ``failed`` after :data:`MAX_ATTEMPTS` tries; ``False`` when it was no longer the caller's."""
    if job.attempts >= MAX_ATTEMPTS:
        values: dict[str, Any] = {"status": "failed", "finished_at": at}
    else:
        values = {"status": "pending", "run_after": at + BACKOFF * 2 ** (job.attempts - 1), "worker": None}
    with map_sql_errors(), engine.begin() as conn:
        j, pending = t.jobs, aliased(t.jobs)
        covered = exists().where(pending.c.key == j.c.key, pending.c.status == "pending", pending.c.id != j.c.id)
        if values["status"] == "pending":  # a newer ask waiting already covers this one
            gone = conn.execute(_held(job).where(covered).values(status="failed", finished_at=at, error=error[:2000]))
            if gone.rowcount == 1:
                return True
        done = conn.execute(_held(job).values(lease_until=None, error=error[:2000], **values))
    return done.rowcount == 1


def _held(job: Job) -> Any:
    return update(t.jobs).where(t.jobs.c.id == job.id, t.jobs.c.worker == job.worker, t.jobs.c.status == "running")


def counts(engine: Engine) -> dict[str, int]:
    """Jobs by status (``tianma worker --once`` reports those waiting)."""
    with map_sql_errors(), engine.connect() as conn:
        rows = conn.execute(select(t.jobs.c.status, func.count()).group_by(t.jobs.c.status)).all()
    return {str(status): int(n) for status, n in rows}


def jobs(engine: Engine) -> list[dict[str, Any]]:
    """Every job, oldest first."""
    with map_sql_errors(), engine.connect() as conn:
        return [t.row_dict(r) for r in conn.execute(select(t.jobs).order_by(t.jobs.c.id))]



def tally(engine: Engine) -> dict[tuple[str, str], int]:
    """Jobs by (kind, status) (``tianma jobs queue``)."""
    with map_sql_errors(), engine.connect() as conn:
        rows = conn.execute(select(t.jobs.c.kind, t.jobs.c.status, func.count()).group_by(t.jobs.c.kind, t.jobs.c.status))
        return {(str(kind), str(status)): int(n) for kind, status, n in rows}


def recent_failures(engine: Engine, limit: int = 5) -> list[dict[str, Any]]:
    """The last jobs left ``failed``, newest first, with their errors."""
    j = t.jobs
    with map_sql_errors(), engine.connect() as conn:
        rows = conn.execute(select(j).where(j.c.status == "failed").order_by(j.c.finished_at.desc(), j.c.id.desc())
                            .limit(limit))  # fmt: skip
        return [t.row_dict(r) for r in rows]


KEEP_FINISHED = timedelta(days=7)
"""How long a finished job (done or failed) stays in the table to be looked at."""


def prune(engine: Engine, at: datetime, keep: timedelta = KEEP_FINISHED) -> int:
    """Delete finished jobs older than ``keep`` (the daily decay job does it); how many. Pending
    and running jobs are never touched."""
    j = t.jobs
    with map_sql_errors(), engine.begin() as conn:
        gone = conn.execute(delete(j).where(j.c.status.in_(("done", "failed")), j.c.finished_at < at - keep))
    return int(gone.rowcount or 0)
