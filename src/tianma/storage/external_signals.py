"""Signals another system sent, under that system's own id (Open WebUI's feedback id).

The same rating arrives more than once (Open WebUI reports a 👍/👎 when it is given, again when
its tags are added and again with the comment): the signal is stored with the sender's id in
``records.external_id`` (``Runtime.feedback(..., external_id=...)``), so a later report finds
the signal it already made instead of adding another one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update

from tianma.storage import schema as t
from tianma.storage.protocols import MemoryStore
from tianma.storage.records import MemoryRecord
from tianma.storage.sql_store import map_sql_errors

TURN_LIMIT = 1000
"""The latest turns of a dialogue a rating is matched against."""


def dialogue_turns(store: MemoryStore, user_id: str, dialogue_id: str) -> list[MemoryRecord]:
    """The user's messages (events) of one dialogue, latest first (at most ``TURN_LIMIT``)."""
    r = t.records.c
    query = (
        select(r.id)
        .where(r.user_id == user_id, r.dialogue_id == dialogue_id, r.kind == "event", r.role == "user")
        .order_by(r.at.desc(), r.created_at.desc())
        .limit(TURN_LIMIT)
    )
    with map_sql_errors(), store.tx.connect() as conn:
        ids = [str(i) for i in conn.execute(query).scalars()]
    found = store.get_many(user_id, ids)
    return [found[i] for i in ids if i in found]


def signal_from(store: MemoryStore, user_id: str, external_id: str) -> MemoryRecord | None:
    """The user's signal recorded under ``external_id``, if any."""
    r = t.records.c
    query = select(r.id).where(r.user_id == user_id, r.external_id == external_id, r.kind == "signal")
    with map_sql_errors(), store.tx.connect() as conn:
        signal_id = conn.execute(query.limit(1)).scalar()
    if signal_id is None:
        return None
    return store.get_many(user_id, [str(signal_id)]).get(str(signal_id))


def revise_signal(store: MemoryStore, signal: MemoryRecord, *, content: str | None = None,
                  data: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Give ``signal`` new words and/or data fields (merged into its data).

    Its confidence and what it credited stay as they are: nothing is counted again.
    """
    values: dict[str, Any] = {"updated_at": datetime.now(UTC)}
    if content is not None:
        values["content"] = content
    if data:
        values["data"] = {**signal.data, **data}
    if len(values) == 1:
        return
    with map_sql_errors(), store.tx.begin() as conn:
        conn.execute(update(t.records).where(t.records.c.id == signal.id).values(**values))
