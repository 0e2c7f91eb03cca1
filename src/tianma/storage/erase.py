"""What a forget takes out of the SQL store: the records, and every copy of their text.

:func:`delete_records` deletes records with their versions, replace-log rows and injections. A
record's text is copied into its versions, the replace log, the review queue (a candidate's
content and preview), reflection reports and run changes (the row before a change, kept for
undo). :func:`erase_copies` runs in the transaction that deletes the records: rows about the
forgotten records are deleted, and in the user's other rows every string that contains a
forgotten text (or belongs to an item about a forgotten record) becomes :data:`FORGOTTEN`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any, NamedTuple

from sqlalchemy import Text, cast, delete, or_, select, update
from sqlalchemy.engine import Connection

from tianma.storage import schema as t

_CHUNK = 500

FORGOTTEN = "[已忘记 forgotten]"
"""What a copy of forgotten text reads as afterwards."""
MIN_TEXT = 3
"""Shorter forgotten texts are erased where they belong to a forgotten record, never by search
(“好” would blank every report)."""
_ID_KEYS = ("id", "record_id", "target_id", "old_id", "new_id", "event_id")
_TEXT_KEYS = ("content", "text", "reply", "message", "quote", "before", "after", "detail")
"""Of an item about a forgotten record, the fields that hold its text."""


class Deleted(NamedTuple):
    """What a delete took out of SQL."""

    ids: list[str]
    """The records deleted."""
    texts: list[str]
    """Their texts (content, reply, earlier versions' content), to find copies outside SQL; empty
    when a whole user was deleted (every file of theirs goes whole)."""


def delete_records(
    conn: Connection, user_id: str, record_ids: Collection[str] | None, dialogue_id: str | None = None
) -> Deleted:
    """Delete a user's records — all (``record_ids`` None), these, or those of ``dialogue_id``
    with that dialogue — and the copies of their text, in ``conn``'s transaction."""
    whole_user = record_ids is None and dialogue_id is None
    found = _selected(conn, user_id, record_ids, dialogue_id)
    ids = [row.id for row in found]
    texts = [] if whole_user else _texts(conn, found)
    for chunk in _chunks(ids):
        conn.execute(delete(t.record_versions).where(t.record_versions.c.record_id.in_(chunk)))
        conn.execute(delete(t.injections).where(t.injections.c.record_id.in_(chunk)))
        conn.execute(delete(t.injections).where(t.injections.c.event_id.in_(chunk)))
        conn.execute(delete(t.replace_log).where(t.replace_log.c.old_id.in_(chunk)))
        conn.execute(delete(t.replace_log).where(t.replace_log.c.new_id.in_(chunk)))
        conn.execute(delete(t.records).where(t.records.c.id.in_(chunk)))
    if whole_user:
        for table in (t.record_versions, t.injections, t.replace_log, t.dialogues):
            conn.execute(delete(table).where(table.c.user_id == user_id))
    if dialogue_id is not None:
        conn.execute(delete(t.dialogues).where(t.dialogues.c.id == dialogue_id, t.dialogues.c.user_id == user_id))
    erase_copies(conn, user_id, ids, texts, whole_user=whole_user)
    return Deleted(ids, texts)


def _texts(conn: Connection, found: list[Any]) -> list[str]:
    texts = [x for row in found for x in (row.content, row.reply) if x]
    for chunk in _chunks([row.id for row in found]):
        versions = select(t.record_versions.c.content).where(t.record_versions.c.record_id.in_(chunk))
        texts.extend(v[0] for v in conn.execute(versions))
    return list(dict.fromkeys(texts))


def _selected(conn: Connection, user_id: str, record_ids: Collection[str] | None, dialogue_id: str | None) -> list[Any]:
    r = t.records.c
    query = select(r.id, r.content, r.reply).where(r.user_id == user_id)
    if record_ids is not None:
        query = query.where(r.id.in_(list(record_ids)))
    if dialogue_id is not None:
        query = query.where(r.dialogue_id == dialogue_id)
    return list(conn.execute(query).all())


def _chunks(items: list[str]) -> list[list[str]]:
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]


def erase_copies(conn: Connection, user_id: str, ids: Collection[str], texts: Iterable[str], *, whole_user: bool) -> None:
    """Delete or blank every copy of the forgotten records' text in ``conn``'s transaction."""
    if whole_user:
        for table in (t.reviews, t.reflection_runs, t.run_changes, t.jobs):
            conn.execute(delete(table).where(table.c.user_id == user_id))
        return
    for chunk in _chunks(list(ids)):
        conn.execute(delete(t.reviews).where(t.reviews.c.record_id.in_(chunk)))
        conn.execute(delete(t.run_changes).where(t.run_changes.c.record_id.in_(chunk)))
    needles = sorted({s for s in texts if len(s) >= MIN_TEXT}, key=len)
    scrub = _Scrubber(set(ids), needles)
    # as stored: plain in text columns, JSON-escaped (\uXXXX) in JSON ones
    patterns = sorted({*ids, *needles, *(json.dumps(n)[1:-1] for n in needles)})
    # other records keep their own content (they are not what was forgotten): their reply and data
    # (a quoted correction, a signal's detail) and their versions' reasons and evidence are cleaned
    for table, columns in (
        (t.reviews, ("content", "reason", "preview", "evidence", "decision")),
        (t.reflection_runs, ("report",)),
        (t.run_changes, ("before",)),
        (t.replace_log, ("reason", "evidence")),
        (t.record_versions, ("reason", "evidence", "data")),
        (t.records, ("reply", "data")),
    ):
        for start in range(0, len(patterns), 100):
            _rewrite(conn, table, user_id, columns, patterns[start : start + 100], scrub)


def _rewrite(
    conn: Connection, table: Any, user_id: str, columns: tuple[str, ...], patterns: list[str], scrub: _Scrubber
) -> None:
    """Rewrite the user's rows of ``table`` where a column mentions a pattern (SQL finds them)."""
    keys = list(table.primary_key.columns)
    mentions = or_(*(cast(table.c[c], Text).like(f"%{_escaped(p)}%", escape="\\") for c in columns for p in patterns))
    rows = conn.execute(select(*keys, *(table.c[c] for c in columns)).where(table.c.user_id == user_id, mentions))
    for row in rows.all():
        values = dict(row._mapping)
        changed = {c: scrub(values[c]) for c in columns}
        changed = {c: v for c, v in changed.items() if v != values[c]}
        if changed:
            conn.execute(update(table).where(*(k == values[k.name] for k in keys)).values(**changed))


def _escaped(pattern: str) -> str:
    return pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class _Scrubber:
    """Maps a JSON value to the same value with forgotten text blanked."""

    def __init__(self, ids: set[str], needles: list[str]) -> None:
        self._ids = ids
        self._needles = needles

    def __call__(self, value: Any, about: bool = False) -> Any:
        if isinstance(value, str):
            if value in self._ids:
                return value  # an id is not text
            if about or any(n in value for n in self._needles):
                return FORGOTTEN
            return value
        if isinstance(value, list):
            return [self(v, about) for v in value]
        if isinstance(value, dict):
            inner = about or any(isinstance(value.get(k), str) and value[k] in self._ids for k in _ID_KEYS)
            return {k: v if k in _ID_KEYS else self(v, inner and k in _TEXT_KEYS) for k, v in value.items()}
        return value
