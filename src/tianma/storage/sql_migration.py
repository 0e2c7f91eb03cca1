"""Moving a store to another database (``tianma migrate --to``): every table of the schema copied
row for row into an empty target of the same schema version, then compared table by table.

The copy reads the source in one transaction (a consistent snapshot of a SQLite file, even with
a writer beside it) and writes the target in batches of :data:`BATCH` rows, parents before
children. The comparison reads both sides again: row counts and an order-independent digest of
every row's values, normalised so that the same data compares equal on SQLite and PostgreSQL
(aware datetimes, JSON as sorted keys). Derived data is not copied: the keyword index is rebuilt
from the records on the target, the vectors stay where they are.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, Integer, Table, func, select, text

from tianma.errors import ConfigError
from tianma.storage import schema as t

BATCH = 1000
"""Rows written per INSERT."""


@dataclass(frozen=True, slots=True)
class TableComparison:
    """One table after a copy."""

    table: str
    source_rows: int
    target_rows: int
    same: bool
    """Same row count and the same digest of every row's values."""


def data_tables() -> list[Table]:
    """The schema's tables in dependency order (parents first), without ``tianma_meta`` (the
    target writes its own)."""
    return [table for table in t.metadata.sorted_tables if table is not t.meta]


def copy_store(source: Engine, target: Engine, progress: Callable[[str, int], None] | None = None) -> int:
    """Copy every data table of ``source`` into ``target``; the rows copied. ``progress(table,
    rows)`` is told after each batch.

    Raises:
        ConfigError: the two stores are of different schema versions, or the target holds data.
    """
    found, wanted = t.stored_version(source), t.stored_version(target)
    if found != wanted:
        raise ConfigError(f"the source store is schema {found}, the target {wanted}: open both with this tianma first")
    with target.connect() as conn:
        full = [table.name for table in data_tables() if conn.execute(select(func.count()).select_from(table)).scalar_one()]
    if full:
        raise ConfigError(f"the target database already holds data ({', '.join(full)}): migrate into an empty one")
    copied = 0
    with source.connect() as read, read.begin(), target.begin() as write:
        for table in data_tables():
            rows = read.execution_options(yield_per=BATCH).execute(select(table))
            for chunk in rows.partitions(BATCH):
                write.execute(table.insert(), [dict(r._mapping) for r in chunk])
                copied += len(chunk)
                if progress is not None:
                    progress(table.name, len(chunk))
        if target.dialect.name == "postgresql":
            _advance_sequences(write)
    return copied


def _advance_sequences(conn: Connection) -> None:
    """Copied ids were written explicitly: move each serial column's sequence past them."""
    for table in data_tables():
        for column in table.primary_key.columns:
            if isinstance(column.type, Integer) and column.autoincrement is not False:
                conn.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table.name}', '{column.name}'), "
                        f"coalesce((SELECT max({column.name}) FROM {table.name}), 0) + 1, false)"
                    )
                )


def compare_stores(source: Engine, target: Engine) -> list[TableComparison]:
    """Each data table's row count on both sides and whether every row's values match."""
    out = []
    with source.connect() as a, target.connect() as b:
        for table in data_tables():
            (na, da), (nb, db) = _digest(a, table), _digest(b, table)
            out.append(TableComparison(table.name, na, nb, na == nb and da == db))
    return out


def _digest(conn: Connection, table: Table) -> tuple[int, str]:
    """Rows and an order-independent digest of their normalised values."""
    lines = sorted(_canonical(dict(r._mapping)) for r in conn.execute(select(table)))
    return len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _canonical(row: dict[str, Any]) -> str:
    def plain(value: Any) -> Any:
        if isinstance(value, datetime):
            return t.as_aware(value).isoformat()
        if isinstance(value, bytes | memoryview):
            return bytes(value).hex()
        return value

    return json.dumps({k: plain(v) for k, v in row.items()}, sort_keys=True, ensure_ascii=False, default=str)
