"""The run log of periodic jobs: one row per (job, slot), claimed by INSERT.

The UNIQUE constraint on (job, slot) is the lock: whichever process or thread inserts the row
first runs the slot, every other one gets an IntegrityError and skips it. No lock file, no
leader election, and it works the same for a cron line and a long-running ``serve``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, select, update
from sqlalchemy.exc import IntegrityError

from tianma.storage import schema as t
from tianma.storage.sql_store import map_sql_errors


def claim(engine: Engine, job: str, slot: datetime, at: datetime) -> bool:
    """Record that ``job`` starts its ``slot`` now; ``False`` when someone already claimed it."""
    with map_sql_errors():
        try:
            with engine.begin() as conn:
                conn.execute(t.job_runs.insert().values(job=job, slot=slot, started_at=at, status="running"))
        except IntegrityError:
            return False
    return True


def finish(
    engine: Engine, job: str, slot: datetime, at: datetime, status: str, error: str | None,
    report: dict[str, Any] | None,
) -> None:  # fmt: skip
    """Close a claimed run as ``ok`` or ``failed``, with its report or error message."""
    with map_sql_errors(), engine.begin() as conn:
        conn.execute(
            update(t.job_runs)
            .where(t.job_runs.c.job == job, t.job_runs.c.slot == slot)
            .values(finished_at=at, status=status, error=error,
                    report=None if report is None else t.plain(report))
        )  # fmt: skip


def taken(engine: Engine, job: str, slot: datetime) -> bool:
    """Whether ``slot`` of ``job`` was claimed (running, done or failed)."""
    with map_sql_errors(), engine.connect() as conn:
        found = conn.execute(
            select(func.count()).where(t.job_runs.c.job == job, t.job_runs.c.slot == slot)
        ).scalar_one()
    return bool(found)


def last_run(engine: Engine, job: str) -> dict[str, Any] | None:
    """The most recently started run of ``job`` (forced ones included), or ``None``."""
    with map_sql_errors(), engine.connect() as conn:
        row = conn.execute(
            select(t.job_runs)
            .where(t.job_runs.c.job == job)
            .order_by(t.job_runs.c.started_at.desc(), t.job_runs.c.id.desc())
            .limit(1)
        ).first()
    return None if row is None else t.row_dict(row)


def runs(engine: Engine, job: str | None = None) -> list[dict[str, Any]]:
    """Every recorded run (of one job), oldest first."""
    query = select(t.job_runs).order_by(t.job_runs.c.started_at, t.job_runs.c.id)
    if job is not None:
        query = query.where(t.job_runs.c.job == job)
    with map_sql_errors(), engine.connect() as conn:
        return [t.row_dict(r) for r in conn.execute(query)]
