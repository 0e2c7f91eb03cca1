"""Everything of a user as one file of JSON lines: what ``tianma export`` writes.

The format (``docs/export-format.md`` is its reference): line 1 a header ::

    {"format": "tianma-export", "version": 1, "schema": 8, "tianma": "0.4.0",
     "exported_at": "2026-12-02T14:03:30+00:00", "users": ["u"]}

then one line per row, ``{"table": "records", "row": {"id": …, "created_at": "…+00:00", …}}``:
the tables of :data:`TABLES` in that order, each table's rows by primary key, every column by
name (datetimes ISO 8601 with their UTC offset, JSON columns as JSON). The home-level and
derived tables (``tianma_meta``, ``job_runs``, ``vector_outbox``, ``record_tags``) are not in it:
the indexes are rebuilt from the rows on restore (:mod:`tianma.storage.export_restore`).

Every row is read inside one read transaction, so an export taken while ``tianma serve`` writes
is one consistent state of the store; rows are streamed a chunk at a time, never held all at
once, and written to a ``.partial`` file renamed into place only once complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Select, Table, func, select, union
from sqlalchemy.engine import Connection

from tianma.errors import ConfigError, InvalidInputError
from tianma.storage import schema as t

FORMAT = "tianma-export"
FORMAT_VERSION = 1
"""Bump with a function in ``export_restore.FORMAT_MIGRATIONS`` that upgrades a row of the previous version."""
TABLES: tuple[Table, ...] = (
    t.dialogues, t.records, t.record_versions, t.replace_log, t.reflection_runs, t.run_changes,
    t.injections, t.reviews,
)  # fmt: skip
"""The exported tables, in the order they are written (a dialogue before its events, a record
before its versions, a run before its changes). Every one has a ``user_id`` column."""
CHUNK = 1000
"""Rows fetched from the store at a time."""

Progress = Callable[[int, int], None]
"""``progress(done, total)``: rows written (or restored) so far, of how many."""


@dataclass(frozen=True, slots=True)
class Header:
    """Line 1 of an export file."""

    version: int
    """The export format's version (:data:`FORMAT_VERSION` when written by this tianma)."""
    schema: int
    """The store schema version of the tianma that wrote the rows (which columns they have)."""
    tianma: str
    exported_at: datetime
    users: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": self.version, "schema": self.schema, "tianma": self.tianma,
                "exported_at": self.exported_at.isoformat(), "users": list(self.users)}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Exported:
    """What an export (or a restore) held: its header and the rows of each table."""

    path: Path
    header: Header
    counts: dict[str, int]
    """Table name → rows, every table of :data:`TABLES` (0 for none), in their order."""

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


def _iso(value: object) -> str:
    """``json.dumps``'s fallback: a datetime column as ISO 8601 with its offset."""
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def row_line(table: str, row: dict[str, Any]) -> str:
    """One row of ``table`` as a line of the file (no newline)."""
    return json.dumps({"table": table, "row": row}, ensure_ascii=False, default=_iso)


@contextmanager
def snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection whose every query reads the same state of the store, whatever other
    processes commit meanwhile. SQLite's Python driver starts no transaction for a SELECT (each
    one would see the newest commit): an explicit ``BEGIN`` holds one read transaction, a WAL
    snapshot, from the first query to the end. Other databases: ``REPEATABLE READ``."""
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN")
        else:
            conn.execution_options(isolation_level="REPEATABLE READ")
        try:
            yield conn
        finally:
            conn.rollback()  # a read: nothing to keep


def _users(conn: Connection, user: str | None) -> tuple[str, ...]:
    """The users of the export: ``user``, or everyone with a row in an exported table.

    Raises:
        InvalidInputError: ``user`` has no row in this store.
    """
    query = union(*(select(table.c.user_id) for table in TABLES))
    if user is not None:
        query = union(*(select(table.c.user_id).where(table.c.user_id == user) for table in TABLES))
    found = tuple(sorted(conn.execute(query).scalars()))
    if user is not None and not found:
        raise InvalidInputError(f"user {user!r} has nothing in this data home / 该用户在此数据目录中没有数据")
    return found


def _rows_of(table: Table, user: str | None) -> Select[Any]:
    query = select(table).order_by(*table.primary_key.columns)
    return query if user is None else query.where(table.c.user_id == user)


def _count(conn: Connection, table: Table, user: str | None) -> int:
    query = select(func.count()).select_from(table)
    return int(conn.execute(query if user is None else query.where(table.c.user_id == user)).scalar_one())


def export(
    engine: Engine, out: Path, tianma: str, user: str | None = None, *,
    progress: Progress | None = None, chunk: int = CHUNK,
) -> Exported:  # fmt: skip
    """Write every row of ``user`` (default: of every user) to the new file ``out``.

    Args:
        engine: the store (opened read-only is enough).
        out: the file to write; it must not exist.
        tianma: the version of tianma writing it (for the header).
        user: only this user.
        progress: told after each chunk of rows, and between tables.
        chunk: rows fetched at a time.

    Raises:
        ConfigError: ``out`` exists or cannot be written.
        InvalidInputError: ``user`` has nothing in this store.
    """
    if out.exists():
        raise ConfigError(f"{out} already exists: choose a new file / 目标文件已存在，请换一个文件名")
    partial = out.with_name(out.name + ".partial")
    with snapshot(engine) as conn:
        version = conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar_one()
        header = Header(FORMAT_VERSION, int(version), tianma, datetime.now(UTC), _users(conn, user))
        totals = {table.name: _count(conn, table, user) for table in TABLES}
        total, done = sum(totals.values()), 0
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # a user's whole memory: private
        except OSError as exc:
            raise ConfigError(f"cannot write {out}: {exc.strerror or exc} / 无法写入导出文件") from exc
        try:
            with open(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(json.dumps(header.to_json(), ensure_ascii=False) + "\n")
                for table in TABLES:
                    result = conn.execute(_rows_of(table, user), execution_options={"yield_per": chunk})
                    for rows in result.partitions():
                        fh.writelines(row_line(table.name, t.row_dict(r)) + "\n" for r in rows)
                        done += len(rows)
                        if progress is not None:
                            progress(done, total)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    partial.replace(out)
    return Exported(out, header, totals)
