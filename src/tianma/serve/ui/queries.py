"""The review UI's own SQL: pages of records, runs and turns, counts, and who owns an id.

Lists are read a page at a time (LIMIT/OFFSET on indexed columns) so a NAS with a large memory
stays fast; records come back through the store (:meth:`MemoryStore.get_many`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.sql.elements import ColumnElement

from tianma.storage import schema as t
from tianma.storage.protocols import MemoryStore
from tianma.storage.records import MemoryRecord
from tianma.storage.sql_store import map_sql_errors


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _in_order(store: MemoryStore, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
    found = store.get_many(user_id, list(ids))
    return [found[i] for i in ids if i in found]


def record_page(
    store: MemoryStore, user_id: str, *, kind: str = "", status: str = "", text: str = "",
    offset: int = 0, limit: int = 50,
) -> tuple[list[MemoryRecord], int]:  # fmt: skip
    """The user's records, newest first, optionally of one kind and status and containing
    ``text``; returns one page and the total."""
    r = t.records.c
    where: list[ColumnElement[bool]] = [r.user_id == user_id]
    if kind:
        where.append(r.kind == kind)
    if status:
        where.append(r.status == status)
    if text:
        where.append(r.content.like(_like(text), escape="\\"))
    with map_sql_errors(), store.engine.connect() as conn:
        total = int(conn.execute(select(func.count()).select_from(t.records).where(*where)).scalar_one())
        ids = list(
            conn.execute(
                select(r.id).where(*where).order_by(r.created_at.desc(), r.id).offset(offset).limit(limit)
            ).scalars()
        )
    return _in_order(store, user_id, ids), total


def record_counts(store: MemoryStore, user_id: str) -> dict[tuple[str, str], int]:
    """(kind, status) → how many records the user has."""
    r = t.records.c
    query = select(r.kind, r.status, func.count()).where(r.user_id == user_id).group_by(r.kind, r.status)
    with map_sql_errors(), store.engine.connect() as conn:
        return {(kind, status): int(n) for kind, status, n in conn.execute(query)}


def pending_count(store: MemoryStore, user_id: str) -> int:
    v = t.reviews.c
    query = select(func.count()).select_from(t.reviews).where(v.user_id == user_id, v.status == "pending")
    with map_sql_errors(), store.engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


@dataclass(frozen=True, slots=True)
class RunRow:
    """One reflection (or maintenance, approval, rollback, edit) run."""

    id: str
    user_id: str
    started_at: datetime
    until: datetime
    trigger: str
    status: str
    report: dict[str, Any]
    changes: int
    """Records the run created or changed (``run_changes`` rows)."""

    @property
    def undoable(self) -> bool:
        return self.status in ("published", "maintenance")

    @property
    def counts(self) -> dict[str, int]:
        """What the run did, by outcome (reflections), or by change (maintenance)."""
        report = self.report
        if isinstance(report.get("counts"), dict):
            return {str(k): int(v) for k, v in report["counts"].items()}
        out = {name: len(report[name]) for name in ("decayed", "inactive", "ab") if report.get(name)}
        return out


def _run_rows(conn: Any, where: Sequence[ColumnElement[bool]], offset: int, limit: int) -> list[RunRow]:
    runs, changes = t.reflection_runs.c, t.run_changes.c
    counted = (
        select(changes.run_id, func.count().label("n")).group_by(changes.run_id).subquery()
    )  # fmt: skip
    query = (
        select(t.reflection_runs, func.coalesce(counted.c.n, 0))
        .outerjoin(counted, counted.c.run_id == runs.id)
        .where(*where)
        .order_by(runs.started_at.desc(), runs.id)
        .offset(offset)
        .limit(limit)
    )
    return [
        RunRow(
            row.id,
            row.user_id,
            row.started_at,
            row.until,
            row.trigger,
            row.status,
            dict(row.report or {}),
            int(row[-1]),
        )
        for row in conn.execute(query)
    ]


def run_page(
    store: MemoryStore, user_id: str, offset: int = 0, limit: int = 50
) -> tuple[list[RunRow], int]:
    """The user's runs, newest first: one page and the total."""
    runs = t.reflection_runs.c
    with map_sql_errors(), store.engine.connect() as conn:
        total = int(
            conn.execute(select(func.count()).select_from(t.reflection_runs).where(runs.user_id == user_id))
            .scalar_one()
        )  # fmt: skip
        return _run_rows(conn, [runs.user_id == user_id], offset, limit), total


def get_run(store: MemoryStore, run_id: str) -> RunRow | None:
    with map_sql_errors(), store.engine.connect() as conn:
        rows = _run_rows(conn, [t.reflection_runs.c.id == run_id], 0, 1)
    return rows[0] if rows else None


def run_changes(store: MemoryStore, run_id: str) -> list[dict[str, Any]]:
    """What a run changed, in order: record id, create/update, and the row before."""
    c = t.run_changes.c
    query = select(t.run_changes).where(c.run_id == run_id).order_by(c.seq)
    with map_sql_errors(), store.engine.connect() as conn:
        return [t.row_dict(r) for r in conn.execute(query)]


def turn_page(store: MemoryStore, user_id: str, offset: int = 0, limit: int = 50) -> list[MemoryRecord]:
    """The user's turns (messages tianma answered), newest first."""
    r = t.records.c
    query = (
        select(r.id)
        .where(r.user_id == user_id, r.kind == "event", r.role == "user",
               or_(r.reply.is_not(None), r.error.is_not(None)))
        .order_by(r.at.desc(), r.id)
        .offset(offset)
        .limit(limit)
    )  # fmt: skip
    with map_sql_errors(), store.engine.connect() as conn:
        ids = list(conn.execute(query).scalars())
    return _in_order(store, user_id, ids)


def signals_about(
    store: MemoryStore, event: MemoryRecord
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """Signals judging a turn's reply (from any dialogue: a repeated question comes later,
    elsewhere), and signals the turn's own message revealed about earlier turns."""
    r = t.records.c
    query = select(r.id).where(
        r.user_id == event.user_id, r.kind == "signal", r.data["target_event_id"].as_string() == event.id
    )
    with map_sql_errors(), store.engine.connect() as conn:
        ids = list(conn.execute(query).scalars())
    judging = sorted(_in_order(store, event.user_id, ids), key=lambda s: s.created_at)
    nearby = store.signals_of_dialogue(event.user_id, event.dialogue_id) if event.dialogue_id else []
    revealed = [s for s in nearby if event.id in s.provenance.event_ids and s.id not in ids]
    return judging, revealed
