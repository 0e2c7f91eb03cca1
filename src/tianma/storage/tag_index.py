"""The association graph's storage: which records are about which things (``record_tags``).

Tags come from :func:`tianma.text.entities.tags`. The graph is derived data, like the keyword
index: its rows are written in the transaction of the records they describe and rebuilt from
SQL. A walk asks only for bounded neighbourhoods — a seed's tags, and at most ``limit`` holders
of one tag — so its cost does not grow with the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import bindparam, delete, select, update

from tianma.storage import schema as t
from tianma.storage.sql_store import chunks
from tianma.storage.transactions import Transactions

_CHUNK = 500
TAG_CHARS = 64


class TagIndex:
    """Record ↔ tag links in the SQL store."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def upsert(self, user_id: str, items: Iterable[tuple[str, Sequence[str]]]) -> None:
        """Set the tags of records of one user (replacing what they had), in the links and in
        the records' own ``tags``."""
        items = list(items)
        rows = [
            {"user_id": user_id, "tag": tag, "record_id": rid}
            for rid, tags in items for tag in dict.fromkeys(x[:TAG_CHARS] for x in tags)
        ]  # fmt: skip
        with self._tx.begin() as conn:
            for chunk in chunks([rid for rid, _ in items], _CHUNK):
                conn.execute(delete(t.record_tags).where(t.record_tags.c.record_id.in_(chunk)))
            if rows:
                conn.execute(t.record_tags.insert(), rows)
            r = t.records.c
            conn.execute(
                update(t.records).where(r.id == bindparam("rid")).values(tags=bindparam("tags")),
                [{"rid": rid, "tags": list(tags)} for rid, tags in items],
            )

    def delete(self, record_ids: Sequence[str]) -> None:
        """Remove records' links."""
        with self._tx.begin() as conn:
            for chunk in chunks(record_ids, _CHUNK):
                conn.execute(delete(t.record_tags).where(t.record_tags.c.record_id.in_(chunk)))

    def drop_user(self, user_id: str) -> None:
        with self._tx.begin() as conn:
            conn.execute(delete(t.record_tags).where(t.record_tags.c.user_id == user_id))

    def clear(self) -> None:
        with self._tx.begin() as conn:
            conn.execute(delete(t.record_tags))
        self.clear_pending()

    def clear_pending(self) -> None:
        """Every record that should have tags has them (:meth:`pending`)."""
        with self._tx.begin() as conn:
            conn.execute(delete(t.meta).where(t.meta.c.key == t.TAGS_PENDING))

    def pending(self) -> bool:
        """Whether records written before the graph existed still wait for their tags."""
        with self._tx.connect() as conn:
            return conn.execute(select(t.meta.c.key).where(t.meta.c.key == t.TAGS_PENDING)).first() is not None

    def tags_of(self, user_id: str, record_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each record's tags (records without any are absent)."""
        c = t.record_tags.c
        out: dict[str, list[str]] = {}
        with self._tx.connect() as conn:
            for chunk in chunks(record_ids, _CHUNK):
                query = select(c.record_id, c.tag).where(c.user_id == user_id, c.record_id.in_(chunk))
                for rid, tag in conn.execute(query):
                    out.setdefault(rid, []).append(tag)
        return out

    def holders(self, user_id: str, tags: Sequence[str], limit: int) -> dict[str, list[str]]:
        """For each tag, at most ``limit`` records of the user that have it."""
        c = t.record_tags.c
        out: dict[str, list[str]] = {}
        with self._tx.connect() as conn:
            for tag in tags:
                query = select(c.record_id).where(c.user_id == user_id, c.tag == tag).limit(limit)
                out[tag] = [rid for (rid,) in conn.execute(query)]
        return out
