"""The vectors that say what a lasting statement is about, kept with the statement.

Whether a new statement replaces an earlier one is decided by closeness in meaning
(:func:`tianma.memory.statements.close_superseded`). e5 embeds a text two ways: as a passage (what
the search index stores) and as a query (“query: …”, what e5's authors prescribe for symmetric
similarity). Two statements compared as queries tell subjects apart better: on the dev users of
the learning benchmark the share of (replaced, other subject) pairs ranked the right way rose
from 0.91 / 0.85 / 0.82 to 0.94 / 0.90 / 0.88 (dev, dev2, dev3), and on the independent
statement pairs from 0.75 to 0.81 — so statements are compared as queries.

A turn already embeds its message as a query (to search with), so a lasting statement keeps that
vector in its data (``data["subject_vector"]``: the embedder's name, a digest of the text and the
unit vector as base64 float16, ~1 KB). A statement stored without one (recorded before this,
imported, by another embedder, or whose text is not the one embedded) gets it when it is first
compared, written back once; ``tianma serve`` gives them to a home's current statements as it starts
(:func:`tianma.memory.statements.fill_subject_vectors`, in the background worker), so a home
recorded before this pays no embedding inside a turn.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from tianma.memory.service import Memory
from tianma.storage.protocols import Embedder, Vector
from tianma.storage.records import MemoryRecord

FIELD = "subject_vector"
"""Where a statement's data keeps its vector."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def encoded(embedder: Embedder, text: str, vector: Vector) -> dict[str, Any]:
    """The data entry for ``vector``, the query vector of ``text`` by ``embedder``."""
    unit = np.asarray(vector, dtype=np.float32)
    unit = unit / max(float(np.linalg.norm(unit)), 1e-9)
    return {"embedder": embedder.name, "text": _digest(text),
            "f16": base64.b64encode(unit.astype("<f2").tobytes()).decode("ascii")}  # fmt: skip


def decoded(embedder: Embedder, record: MemoryRecord) -> Vector | None:
    """The vector a record keeps, if it keeps one of ``embedder`` for its text."""
    entry = (record.data or {}).get(FIELD)
    if not isinstance(entry, dict) or entry.get("embedder") != embedder.name or entry.get("text") != _digest(record.content):
        return None
    try:
        raw = np.frombuffer(base64.b64decode(str(entry.get("f16", "")), validate=True), dtype="<f2")
    except (ValueError, TypeError):
        return None
    return raw.astype(np.float32) if raw.size == embedder.dim else None


def subject_vectors(memory: Memory, records: Sequence[MemoryRecord]) -> list[Vector]:
    """Each record's subject vector: kept, or embedded now from its text and kept from now on."""
    kept = [decoded(memory.embedder, r) for r in records]
    made = embedded(memory.embedder, [r for r, v in zip(records, kept, strict=True) if v is None])
    keep(memory, made)
    return [v if v is not None else made[r.id][1] for r, v in zip(records, kept, strict=True)]


def embedded(embedder: Embedder, records: Sequence[MemoryRecord]) -> dict[str, tuple[MemoryRecord, Vector]]:
    """The subject vectors of ``records``, embedded now (one e5 query each, ~20 ms)."""
    return {r.id: (r, embedder.embed_query(r.content)) for r in records}


def keep(memory: Memory, made: dict[str, tuple[MemoryRecord, Vector]]) -> None:
    """Write embedded subject vectors into their records' data (one user's)."""
    if made:
        user_id = next(iter(made.values()))[0].user_id
        entries = {i: {FIELD: encoded(memory.embedder, r.content, v)} for i, (r, v) in made.items()}
        memory.store.put_data(user_id, entries)
