"""Reading an export file (:mod:`tianma.storage.export`) back into a store: ``tianma restore FILE``.

The whole file is checked before anything is written (:func:`scan`), then written in one
transaction (:func:`restore`): a malformed line, a file of another format or of a newer tianma
writes nothing. Older files are brought up to date row by row as they are read:

* an older **format version** passes each row through ``FORMAT_MIGRATIONS[n]`` for every version
  ``n`` after the file's, in order;
* rows of an older **store schema** (the header's ``schema``) may lack columns added since: they
  get what the schema migration gave existing rows (:data:`SCHEMA_FILLS`: ``records.valid_from``
  is ``at`` or ``created_at``, as :func:`tianma.storage.schema._add_validity` set it), else the
  column's default, else NULL; columns this schema no longer has are ignored. A file of the
  current schema must have every column and no other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import Column, Engine, Float, Integer, String, Table, select
from sqlalchemy.engine import Connection

from tianma.errors import ConfigError, InvalidInputError
from tianma.storage import schema as t
from tianma.storage.export import FORMAT, FORMAT_VERSION, TABLES, Exported, Header, Progress

RowMigration = Callable[[str, dict[str, Any]], dict[str, Any]]
FORMAT_MIGRATIONS: dict[int, RowMigration] = {}
"""``FORMAT_MIGRATIONS[n](table, row)`` turns a row of export format ``n - 1`` into format ``n``
(none yet: version 1 is the first)."""
SCHEMA_FILLS: dict[tuple[str, str], Callable[[dict[str, Any]], Any]] = {
    ("records", "valid_from"): lambda row: row.get("at") or row.get("created_at"),
}
"""A column an older schema did not have, filled from the row's other (decoded) values as the
schema migration that added it filled existing rows."""
BATCH = 500
"""Rows inserted per statement."""
_BY_NAME = {table.name: table for table in TABLES}


def _bad(path: Path, line: int, what: str) -> InvalidInputError:
    return InvalidInputError(f"{path}, line {line}: {what} / 导出文件第 {line} 行有误")


def read_header(fh: TextIO, path: Path) -> Header:
    """The header (line 1) of an open export file.

    Raises:
        InvalidInputError: not a tianma export, or written by a newer tianma.
    """
    try:
        raw = json.loads(fh.readline())
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InvalidInputError(f"{path} is not a tianma export (line 1 is no {FORMAT} header) / 不是 tianma 导出文件")
    try:
        version, schema = int(raw["version"]), int(raw["schema"])
        exported_at = datetime.fromisoformat(str(raw["exported_at"]))
        users = raw["users"]
        if not isinstance(users, list) or not all(isinstance(u, str) for u in users) or version < 1:
            raise ValueError("users")
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(path, 1, f"a {FORMAT} header without a valid {exc}") from exc
    for name, found, known in (("export format", version, FORMAT_VERSION), ("store schema", schema, t.SCHEMA_VERSION)):
        if found > known:
            raise InvalidInputError(
                f"{path} was written by a newer tianma ({raw.get('tianma')}: {name} {found}, this tianma reads up "
                f"to {known}): upgrade tianma to restore it / 导出文件来自更新版本的 tianma，请先升级"
            )
    return Header(version, schema, str(raw.get("tianma", "?")), exported_at, tuple(users))


def _value(column: Column[Any], value: Any) -> Any:
    """A JSON value as the column takes it (datetimes parsed); ValueError when it cannot be."""
    if value is None:
        if not column.nullable:
            raise ValueError(f"{column.name} may not be null")
        return None
    kind = column.type
    if isinstance(kind, t.UtcDateTime):
        try:
            parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            raise ValueError(f"{column.name} is not an ISO 8601 time with an offset: {value!r}")
        return parsed
    expected: type | tuple[type, ...] | None = (
        int if isinstance(kind, Integer) else (int, float) if isinstance(kind, Float)
        else str if isinstance(kind, String) else None  # Text is a String; JSON takes anything
    )  # fmt: skip
    if expected is not None and (not isinstance(value, expected) or isinstance(value, bool)):
        raise ValueError(f"{column.name} is not a {kind}: {value!r}")
    return value


def _row(table: Table, raw: dict[str, Any], schema: int) -> dict[str, Any]:
    """``raw`` with each column decoded, missing ones filled (older schema) and unknown ones
    dropped; ValueError when it cannot be."""
    extra, missing = set(raw) - set(table.c.keys()), [c for c in table.columns if c.name not in raw]
    if schema == t.SCHEMA_VERSION and (extra or missing):
        raise ValueError(f"columns {sorted(extra)} unknown, {[c.name for c in missing]} missing")
    row = {c.name: _value(c, raw[c.name]) for c in table.columns if c.name in raw}
    for column in missing:
        fill = SCHEMA_FILLS.get((table.name, column.name))
        default = column.default.arg if column.default is not None and column.default.is_scalar else None  # type: ignore[attr-defined]
        if fill is not None:
            row[column.name] = fill(row)
        elif default is not None or column.nullable or column.autoincrement is True:
            row[column.name] = default  # an autoincrement id left out: the database gives one
        else:
            raise ValueError(f"{column.name} is missing (schema {schema} had it; it has no default)")
    return row


def rows(fh: TextIO, path: Path, header: Header) -> Iterator[tuple[Table, dict[str, Any]]]:
    """The rows after the header, checked, brought up to this format and schema, decoded.

    Raises:
        InvalidInputError: a line that is not one row of a known table of a user of the header.
    """
    for number, line in enumerate(fh, start=2):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise _bad(path, number, f"not JSON ({exc})") from exc
        if not isinstance(item, dict) or not isinstance(item.get("table"), str) or not isinstance(item.get("row"), dict):
            raise _bad(path, number, 'not {"table": …, "row": {…}}')
        name, raw = item["table"], item["row"]
        for version in range(header.version + 1, FORMAT_VERSION + 1):
            raw = FORMAT_MIGRATIONS[version](name, raw)
        table = _BY_NAME.get(name)
        if table is None:
            raise _bad(path, number, f"unknown table {name!r}")
        try:
            row = _row(table, raw, header.schema)
        except ValueError as exc:
            raise _bad(path, number, f"{name}: {exc}") from exc
        if row["user_id"] not in header.users:
            raise _bad(path, number, f"a row of user {row['user_id']!r}, whom the header does not list")
        yield table, row


def scan(path: Path) -> tuple[Exported, set[int]]:
    """Check a whole export file without writing anything: its header and rows per table, and
    the ``replace_log`` ids it holds.

    Raises:
        InvalidInputError: the file cannot be read, is not a tianma export, is newer than this
            tianma, or has a malformed line.
    """
    counts = {table.name: 0 for table in TABLES}
    log_ids: set[int] = set()
    with _open(path) as fh:
        header = read_header(fh, path)
        for table, row in rows(fh, path, header):
            counts[table.name] += 1
            if table is t.replace_log and row["id"] is not None:
                log_ids.add(row["id"])
    return Exported(path, header, counts), log_ids


def _open(path: Path) -> TextIO:
    try:
        return path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc} / 无法读取导出文件") from exc


def users_present(conn: Connection, users: tuple[str, ...]) -> list[str]:
    """Which of ``users`` already have a row in an exported table of the store."""
    found: set[str] = set()
    for table in TABLES:
        found.update(conn.execute(select(table.c.user_id).where(table.c.user_id.in_(users)).distinct()).scalars())
    return sorted(found)


def _ids_free(conn: Connection, ids: set[int]) -> bool:
    """Whether none of ``ids`` is taken in the store's ``replace_log``."""
    ordered = sorted(ids)
    for start in range(0, len(ordered), BATCH):
        chunk = ordered[start : start + BATCH]
        if conn.execute(select(t.replace_log.c.id).where(t.replace_log.c.id.in_(chunk)).limit(1)).first():
            return False
    return True


def _batches(items: Iterator[tuple[Table, dict[str, Any]]]) -> Iterator[tuple[Table, list[dict[str, Any]]]]:
    """Consecutive rows of one table, at most :data:`BATCH` at a time."""
    for table, group in groupby(items, key=itemgetter(0)):
        batch: list[dict[str, Any]] = []
        for _, row in group:
            batch.append(row)
            if len(batch) == BATCH:
                yield table, batch
                batch = []
        if batch:
            yield table, batch


def restore(engine: Engine, path: Path, *, progress: Progress | None = None) -> Exported:
    """Add the rows of the export file ``path`` to the store, in one transaction, after checking
    the whole file (:func:`scan`). The indexes are not touched: rebuild them afterwards
    (``tianma restore`` does).

    ``replace_log.id`` is an autoincrement key no other row refers to: the file's ids are kept
    when the store has none of them (restored into an empty home, the table reads as exported);
    if one is taken (another user's row) or a row has none, every row of the file gets a new id
    from the database, inserted in the file's order, so the log keeps its order.

    Raises:
        InvalidInputError: as :func:`scan`.
        ConfigError: a user of the file already has rows in the store (never merged).
    """
    checked, log_ids = scan(path)
    total, done = checked.rows, 0
    with engine.begin() as conn:
        present = users_present(conn, checked.header.users)
        if present:
            raise ConfigError(
                f"{', '.join(present)} already has data in this home: a restore never merges into a user; forget "
                "that user first (tianma memory forget --all --user …) or restore into a new --home "
                "/ 该用户在此数据目录中已有数据，恢复不会合并：请先删除该用户，或恢复到新的数据目录"
            )
        keep_ids = len(log_ids) == checked.counts[t.replace_log.name] and _ids_free(conn, log_ids)
        with _open(path) as fh:
            for table, batch in _batches(rows(fh, path, read_header(fh, path))):
                if table is t.replace_log and not keep_ids:
                    batch = [{k: v for k, v in row.items() if k != "id"} for row in batch]
                conn.execute(table.insert(), batch)
                done += len(batch)
                if progress is not None:
                    progress(done, total)
    return checked
