"""The experiments table: which online experiment runs, with which arms, since when.

At most one experiment runs at a time; starting one while another runs is refused, stopping
sets ``stopped_at`` (the row stays: the report of a stopped experiment is still read from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, select, update

from tianma.errors import InvalidInputError, RecordNotFoundError
from tianma.storage import schema as t
from tianma.storage.sql_store import map_sql_errors


@dataclass(frozen=True, slots=True)
class Experiment:
    name: str
    unit: str
    """``user`` or ``dialogue``: what is assigned to an arm."""
    arms: dict[str, list[str]]
    """Arm name → the variant's items; the baseline arm is implicit."""
    started_at: datetime
    stopped_at: datetime | None = None


def _of(row: object) -> Experiment:
    m = row._mapping  # type: ignore[attr-defined]
    return Experiment(m["name"], m["unit"], {k: list(v) for k, v in dict(m["arms"]).items()}, m["started_at"], m["stopped_at"])


def start(engine: Engine, name: str, unit: str, arms: dict[str, list[str]], at: datetime) -> Experiment:
    """Record a new running experiment.

    Raises:
        InvalidInputError: another experiment runs, or one of that name ran before.
    """
    e = t.experiments
    with map_sql_errors(), engine.begin() as conn:
        running = conn.execute(select(e.c.name).where(e.c.stopped_at.is_(None))).scalar()
        if running is not None:
            raise InvalidInputError(f"experiment {running!r} is running; stop it first (tianma experiment stop {running}) "
                                    "/ 已有实验在运行")  # fmt: skip
        if conn.execute(select(e.c.name).where(e.c.name == name)).scalar() is not None:
            raise InvalidInputError(f"an experiment named {name!r} ran before; choose another name / 名称已使用")
        conn.execute(e.insert().values(name=name, unit=unit, arms=arms, started_at=at))
    return Experiment(name, unit, arms, at)


def stop(engine: Engine, name: str, at: datetime) -> Experiment:
    """Stop a running experiment; every unit is served by the baseline from the next turn.

    Raises:
        RecordNotFoundError: no experiment of that name is running.
    """
    e = t.experiments
    with map_sql_errors(), engine.begin() as conn:
        done = conn.execute(update(e).where(e.c.name == name, e.c.stopped_at.is_(None)).values(stopped_at=at))
        if done.rowcount != 1:
            raise RecordNotFoundError(f"no running experiment named {name!r} / 没有运行中的该实验")
        return _of(conn.execute(select(e).where(e.c.name == name)).one())


def running(engine: Engine) -> Experiment | None:
    """The experiment that runs now, if any."""
    e = t.experiments
    with map_sql_errors(), engine.connect() as conn:
        row = conn.execute(select(e).where(e.c.stopped_at.is_(None))).first()
    return None if row is None else _of(row)


def all_experiments(engine: Engine) -> list[Experiment]:
    """Every experiment, the newest first."""
    e = t.experiments
    with map_sql_errors(), engine.connect() as conn:
        return [_of(row) for row in conn.execute(select(e).order_by(e.c.started_at.desc(), e.c.name))]


def get(engine: Engine, name: str) -> Experiment:
    """An experiment, running or stopped.

    Raises:
        RecordNotFoundError: none of that name.
    """
    e = t.experiments
    with map_sql_errors(), engine.connect() as conn:
        row = conn.execute(select(e).where(e.c.name == name)).first()
    if row is None:
        raise RecordNotFoundError(f"no experiment named {name!r} / 没有该实验")
    return _of(row)
