"""What an import asks of the store: which messages are there already, under their source's id
or as tianma recorded them live, and the imported messages of a day."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select

from tianma.storage import schema as t
from tianma.storage.protocols import MemoryStore
from tianma.storage.records import MemoryRecord
from tianma.storage.sql_store import chunks, map_sql_errors

IMPORT_SOURCE = "import"
"""``Provenance.source`` of every record an import writes."""


def stored_external_ids(
    store: MemoryStore, user_id: str, external_ids: Sequence[str]
) -> dict[str, tuple[str, str | None]]:
    """Those of ``external_ids`` the user already has a record under: the record's id and the
    tag of the import that wrote it (None: not an import)."""
    r = t.records.c
    found: dict[str, tuple[str, str | None]] = {}
    with map_sql_errors(), store.tx.connect() as conn:
        for chunk in chunks(list(external_ids), 500):
            query = select(r.external_id, r.id, r.data).where(r.user_id == user_id, r.external_id.in_(chunk))
            for external_id, record_id, data in conn.execute(query):
                imported = (data or {}).get("import")
                found[str(external_id)] = (str(record_id), imported.get("tag") if isinstance(imported, dict) else None)
    return found


def user_messages_between(store: MemoryStore, user_id: str, start: datetime, end: datetime) -> list[MemoryRecord]:
    """The user's own messages said from ``start`` up to ``end``, oldest first."""
    r = t.records.c
    query = (
        select(r.id)
        .where(r.user_id == user_id, r.kind == "event", r.role == "user")
        .where(r.at >= t.as_aware(start), r.at < t.as_aware(end))
        .order_by(r.at)
    )
    with map_sql_errors(), store.tx.connect() as conn:
        ids = [str(i) for i in conn.execute(query).scalars()]
    found = store.get_many(user_id, ids)
    return [found[i] for i in ids if i in found]


def reflected_until(store: MemoryStore, user_id: str, trigger: str) -> datetime | None:
    """Where the published reflections of one import (``trigger``) of the user stopped."""
    runs = t.reflection_runs.c
    query = select(runs.until).where(runs.user_id == user_id, runs.trigger == trigger, runs.status == "published")
    with map_sql_errors(), store.tx.connect() as conn:
        return conn.execute(query.order_by(runs.until.desc()).limit(1)).scalar()


def user_message_times(store: MemoryStore, user_id: str, start: datetime, end: datetime) -> list[datetime]:
    """When each of the user's messages from ``start`` up to ``end`` (inclusive) was said, in order."""
    r = t.records.c
    query = (
        select(r.at)
        .where(r.user_id == user_id, r.kind == "event", r.role == "user")
        .where(r.at >= t.as_aware(start), r.at <= t.as_aware(end))
        .order_by(r.at)
    )
    with map_sql_errors(), store.tx.connect() as conn:
        return [t.as_aware(x) for x in conn.execute(query).scalars()]
