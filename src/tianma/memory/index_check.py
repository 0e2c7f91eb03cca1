"""Whether the derived indexes hold exactly what SQL says they should, and the repair of what not.

SQL is the truth: every active record of a retrievable kind must have one vector and one keyword
entry, and nothing else may. :func:`index_diffs` compares the id sets per user (counts alone
would call an orphan plus a missing entry healthy); :func:`repair` applies the pending vector
outbox, then indexes only what is missing and removes only what is orphaned — no rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass

from tianma.memory.service import INDEXED_KINDS, Memory, is_indexed
from tianma.storage import outbox


@dataclass(frozen=True)
class IndexDiff:
    """One user's indexable records in SQL against the entries of both derived indexes."""

    user_id: str
    records: int
    """Active records of retrievable kinds (what both indexes should hold)."""
    vectors: int
    keywords: int
    missing_vectors: tuple[str, ...] = ()
    orphan_vectors: tuple[str, ...] = ()
    missing_keywords: tuple[str, ...] = ()
    orphan_keywords: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """Both indexes hold exactly the records SQL says."""
        return not (self.missing_vectors or self.orphan_vectors or self.missing_keywords or self.orphan_keywords)


def expected_ids(memory: Memory, user_id: str) -> set[str]:
    """The ids both indexes should hold for ``user_id``."""
    records = memory.store.list_records(user_id, sorted(INDEXED_KINDS), "active")
    return {r.id for r in records if is_indexed(r)}


def index_diffs(memory: Memory) -> list[IndexDiff]:
    """Per user of the store, what each index lacks and holds too many."""
    diffs = []
    for user_id in memory.store.users():
        want = expected_ids(memory, user_id)
        vectors, keywords = memory.vectors.ids(user_id), memory.keywords.ids(user_id)
        missing_v, orphan_v = tuple(sorted(want - vectors)), tuple(sorted(vectors - want))
        missing_k, orphan_k = tuple(sorted(want - keywords)), tuple(sorted(keywords - want))
        diffs.append(IndexDiff(user_id, len(want), len(vectors), len(keywords), missing_v, orphan_v, missing_k, orphan_k))
    return diffs


def pending_writes(memory: Memory) -> int:
    """Vector writes committed in SQL but not yet applied (the outbox)."""
    return outbox.pending(memory.store.tx)


@dataclass(frozen=True)
class Repair:
    """What :func:`repair` did."""

    applied: int
    """Outbox rows applied first."""
    indexed: int
    """Records put into the indexes (missing from either)."""
    removed: int
    """Orphan entries taken out."""


def repair(memory: Memory) -> Repair:
    """Apply the outbox, then index what either index lacks and unindex what it holds too many."""
    applied = memory.drain()
    indexed = removed = 0
    for diff in index_diffs(memory):
        missing = sorted({*diff.missing_vectors, *diff.missing_keywords})
        orphans = sorted({*diff.orphan_vectors, *diff.orphan_keywords})
        if orphans:
            memory.unindex(diff.user_id, orphans)
            removed += len(orphans)
        if missing:
            found = memory.store.get_many(diff.user_id, missing)
            memory.index([found[i] for i in missing if i in found])
            indexed += len(missing)
    memory.drain()
    return Repair(applied, indexed, removed)
