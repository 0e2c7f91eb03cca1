"""A turn's reply after the turn: regenerated, or continued.

Regenerated (the client asked for another reply to a message already recorded): the turn's
event stays the one of the first reply (the user said it once); its reply and what the turn
injected are replaced by the new turn's, in one transaction, after the weak ``regenerate``
signal on the old reply has been credited to what the old one injected. Continued (“continue”,
the answer after a tool call): only the reply grows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, update

from tianma.storage import schema as t
from tianma.storage.sql_store import SqlMemoryStore, injection_values, map_sql_errors


def replace_reply(
    store: SqlMemoryStore, event_id: str, user_id: str, reply: str | None, error: str | None,
    injections: Iterable[dict[str, Any]],
) -> None:  # fmt: skip
    """Give ``event_id`` its new reply (or error) and the new turn's injections (``record_id, role,
    rank, score, explored``), replacing the old ones."""
    rows = injection_values(event_id, user_id, injections)
    with map_sql_errors(), store.tx.begin() as conn:
        conn.execute(
            update(t.records)
            .where(t.records.c.id == event_id, t.records.c.user_id == user_id, t.records.c.kind == "event")
            .values(reply=reply, error=error)
        )
        conn.execute(delete(t.injections).where(t.injections.c.event_id == event_id))
        if rows:
            conn.execute(t.injections.insert(), rows)


def set_reply(store: SqlMemoryStore, event_id: str, user_id: str, reply: str) -> bool:
    """Give ``event_id`` (an event of ``user_id``) the reply ``reply``; False when there is none."""
    with map_sql_errors(), store.tx.begin() as conn:
        done = conn.execute(
            update(t.records)
            .where(t.records.c.id == event_id, t.records.c.user_id == user_id, t.records.c.kind == "event")
            .values(reply=reply)
        )
    return done.rowcount == 1
