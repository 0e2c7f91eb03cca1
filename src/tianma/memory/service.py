"""The memory as one object: SQL truth plus the derived dense, keyword and tag indexes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any

from tianma.errors import BackendUnavailableError
from tianma.memory.embedders import EMBED_CHARS
from tianma.storage import outbox
from tianma.storage.erase import Deleted
from tianma.storage.protocols import Embedder, KeywordIndex, Matrix, VectorIndex
from tianma.storage.records import Kind, MemoryRecord, NewEvent, Provenance
from tianma.storage.sql_store import SqlMemoryStore
from tianma.storage.tag_index import TagIndex
from tianma.text.entities import tags as tags_of

logger = logging.getLogger(__name__)

INDEXED_KINDS: frozenset[Kind] = frozenset({"event", "fact", "preference", "experience"})
"""Kinds that retrieval can return; strategies are matched by trigger, signals never injected."""


def index_text(record: MemoryRecord) -> str:
    """The text a record is indexed under (an imported message keeps its speaker's name)."""
    if record.kind == "event" and record.speaker:
        return f"{record.speaker}: {record.content}"
    return record.content


def is_indexed(record: MemoryRecord) -> bool:
    """Only active records of retrievable kinds are in the indexes, and of imported history only
    what passed the write filter (the rest is ``archived``: :mod:`tianma.importing.pipeline`)."""
    imported = record.data.get("import")
    archived = isinstance(imported, dict) and imported.get("archived") is True
    return record.status == "active" and record.kind in INDEXED_KINDS and bool(record.content.strip()) and not archived


@dataclass
class Memory:
    """SQL store (truth), vector index, keyword index and association graph (derived), and the
    embedder."""

    store: SqlMemoryStore
    vectors: VectorIndex
    keywords: KeywordIndex
    embedder: Embedder
    tags: TagIndex

    def index(self, records: Sequence[MemoryRecord], vectors: Matrix | None = None) -> None:
        """Put indexable records into both indexes, embedding them unless ``vectors`` given: the
        keyword rows and the vector outbox rows in one transaction (the open unit's, if any),
        the vector index from the outbox once it committed."""
        keep = [i for i, r in enumerate(records) if is_indexed(r)]
        if not keep:
            return
        chosen = [records[i] for i in keep]
        if vectors is None:
            matrix = self.embedder.embed_passages([index_text(r)[:EMBED_CHARS] for r in chosen])
        else:
            matrix = vectors[keep]
        with self.store.tx.unit() as conn:
            for user_id in {r.user_id for r in chosen}:
                rows = [i for i, r in enumerate(chosen) if r.user_id == user_id]
                outbox.enqueue_upserts(conn, user_id, [chosen[i].id for i in rows], matrix[rows])
                self.keywords.upsert(user_id, [(chosen[i].id, index_text(chosen[i])) for i in rows])
                self.tags.upsert(user_id, [(chosen[i].id, tags_of(index_text(chosen[i]))) for i in rows])
            self.store.tx.after_commit(self._drain_after_commit)

    def unindex(self, user_id: str, record_ids: Sequence[str]) -> None:
        """Take records out of both indexes (they stay in SQL), as :meth:`index` puts them in."""
        if not record_ids:
            return
        with self.store.tx.unit() as conn:
            outbox.enqueue_deletes(conn, user_id, record_ids)
            self.keywords.delete(record_ids)
            self.tags.delete(record_ids)
            self.store.tx.after_commit(self._drain_after_commit)

    def drain(self) -> int:
        """Apply the pending vector writes (:mod:`tianma.storage.outbox`); how many.

        Raises:
            BackendUnavailableError: the vector index failed (what is left stays pending).
        """
        return outbox.drain(self.store.tx, self.vectors)

    def _drain_after_commit(self) -> None:
        """:meth:`drain` after a unit committed: a vector index failure does not undo a committed
        turn; the rows stay in the outbox for the next drain (``tianma doctor`` shows them)."""
        try:
            self.drain()
        except BackendUnavailableError:
            logger.warning("vector index writes left in the outbox", exc_info=True)

    def reindex(self, user_id: str, record_ids: Sequence[str]) -> None:
        """After records changed in SQL: the active ones in the indexes, the others out."""
        if not record_ids:
            return
        records = self.store.get_many(user_id, list(record_ids))
        gone = [rid for rid in record_ids if rid not in records or records[rid].status != "active"]
        self.unindex(user_id, gone)
        self.index([r for r in records.values() if r.status == "active"])

    def forget(self, user_id: str, record_id: str | None = None, *, dialogue_id: str | None = None) -> Deleted:
        """Really delete one record, one dialogue's messages and signals, or everything of a
        user: SQL rows (and the copies of their text), keyword rows and the outbox rows that
        delete their vectors, in one transaction; the ids deleted and their texts."""
        with self.store.tx.unit() as conn:
            if dialogue_id is not None:
                deleted = self.store.delete(user_id, dialogue_id=dialogue_id)
            else:
                deleted = self.store.delete(user_id, None if record_id is None else [record_id])
            if record_id is None and dialogue_id is None:
                outbox.enqueue_drop(conn, user_id)
                self.keywords.drop_user(user_id)
                self.tags.drop_user(user_id)
            else:
                self.unindex(user_id, deleted.ids)
            self.store.tx.after_commit(self._drain_after_commit)
        self.keywords.optimize()  # FTS5 keeps deleted tokens in old segments until merged
        self.vectors.compact()  # Edge keeps deleted vectors in their segment until vacuumed
        return deleted

    def rebuild(self, batch: int = 256, progress: Callable[[int, int], None] | None = None) -> int:
        """Recreate both indexes from SQL; returns how many records were indexed."""
        with self.store.tx.begin() as conn:
            outbox.clear(conn)
        self.vectors.drop_all()
        self.keywords.clear()
        self.tags.clear()
        return self._each_indexable(batch, progress, self.index)

    def tag_backlog(self, batch: int = 512, progress: Callable[[int, int], None] | None = None) -> int:
        """Tag the records a store from before the association graph holds (once, after its
        schema moved on); how many were tagged."""
        if not self.tags.pending():
            return 0

        def tag(records: Sequence[MemoryRecord]) -> None:
            with self.store.tx.unit():
                for user_id, group in groupby(records, key=lambda r: r.user_id):
                    self.tags.upsert(user_id, [(r.id, tags_of(index_text(r))) for r in group])

        done = self._each_indexable(batch, progress, tag)
        self.tags.clear_pending()
        return done

    def _each_indexable(
        self, batch: int, progress: Callable[[int, int], None] | None, apply: Callable[[Sequence[MemoryRecord]], None]
    ) -> int:
        """``apply`` to every record that belongs in the indexes, ``batch`` at a time, telling
        ``progress``; how many there were."""
        todo = [r for r in self.store.list_records(None, kind=sorted(INDEXED_KINDS), status="active") if is_indexed(r)]
        for start in range(0, len(todo), batch):
            apply(todo[start : start + batch])
            if progress is not None:
                progress(min(start + batch, len(todo)), len(todo))
        return len(todo)

    def record_events(self, events: Sequence[NewEvent], vectors: Matrix | None = None) -> list[MemoryRecord]:
        """Store events in SQL and index the new ones, in one transaction."""
        with self.store.tx.unit():
            stored, added = self.store.add_events(events)
            fresh = [i for i, r in enumerate(stored) if r.id in added]
            self.index([stored[i] for i in fresh], None if vectors is None else vectors[fresh])
        return stored

    def add_signal(
        self,
        user_id: str,
        signal_type: str,
        confidence: float,
        *,
        target_event_id: str,
        source_event_id: str | None,
        dialogue_id: str | None,
        at: datetime,
        detail: str = "",
        text: str | None = None,
        external_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> MemoryRecord:
        """Store a signal judging ``target_event_id``, credited to what that turn injected.

        ``external_id``: the id the system that sent it gives it; ``extra``: more fields of its data.
        """
        credited = [row["record_id"] for row in self.store.injections_of(target_event_id)]
        events = tuple(e for e in (target_event_id, source_event_id) if e)
        return self.store.add_record(
            user_id,
            "signal",
            text or detail or signal_type,
            Provenance(event_ids=events, dialogue_ids=(dialogue_id,) if dialogue_id else (), source="signal"),
            at=at,
            confidence=confidence,
            dialogue_id=dialogue_id,
            data={
                "type": signal_type,
                "target_event_id": target_event_id,
                "credited": credited,
                "detail": detail,
                **(extra or {}),
            },
            external_id=external_id,
        )
