"""The vectors that say what a lasting statement is about, kept with the statement.

Whether a new statement replaces an earlier one is decided by closeness in meaning
(:func:`tianma.memory.statements.close_superseded`). e5 embeds a text two ways: as a passage (what
the search index stores) and as a query (“query: …”, what e5's authors prescribe for symmetric
similarity). Two statements compared as queries tell subjects apart better: on the dev users of
the learning benchmark the share of (replaced, other subject) pairs ranked the right way rose
from 0.91 / 0.85 / 0.82 to 0.94 / 0.90 / 0.88 (dev, dev2, dev3), and on the independent
statement pairs from 0.75 to 0.81 — so statements are compared as queries.

Since 2026-12-05 the query is by the subject model (:mod:`tianma.memory.subject_model`: e5-small
trained to tell one slot from another; a non-e5 embedder is its own subject model and the turn's
query vector is reused). A lasting statement is embedded by it as the turn records it, outside the
memory lock (~20 ms), and keeps that
vector in its data (``data["subject_vector"]``: the embedder's name, a digest of the text and the
unit vector as base64 float16, ~1 KB). A statement stored without one (recorded before this,
imported, by another embedder, or whose text is not the one embedded) gets it when it is first
compared, written back once; ``tianma serve`` gives them to a home's current statements as it starts
(:func:`tianma.memory.statements.fill_subject_vectors`, in the background worker), so a home
recorded before this pays no embedding inside a turn.

A statement of several clauses whose wish sits beside an account of why (“give me headers and bold
text, i'm reading your answers in obsidian now and they render nicely”) is, as a whole, near its
account: its clauses that name a facet (:func:`tianma.policies.aspects.facet_clauses`) are kept
embedded beside it (``clauses``), and such a clause close to an earlier statement of the same
facet closes it (:func:`tianma.memory.statements.close_superseded`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from tianma.memory.service import Memory
from tianma.memory.subject_model import subject_embedder
from tianma.policies.aspects import facet_clauses
from tianma.storage.protocols import Embedder, Vector
from tianma.storage.records import MemoryRecord

FIELD = "subject_vector"
"""Where a statement's data keeps its vector."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Clause(NamedTuple):
    """A clause of a statement that names a facet: its facets and its query vector."""

    facets: frozenset[str]
    vector: Vector


class Subject(NamedTuple):
    """What a statement is about: the query vector of its whole text and of its facet clauses."""

    vector: Vector
    clauses: tuple[Clause, ...]


MAX_CLAUSES = 8
"""Facet clauses embedded per statement, the first ones: a pasted wall of wishes costs at most
this many e5 queries (~20 ms each), not one per line."""


def about(embedder: Embedder, text: str, query: Vector | None = None) -> Subject:
    """The subject of ``text`` by the subject model of ``embedder`` (:func:`~tianma.memory.
    subject_model.subject_embedder`, ~20 ms), and one more query for each clause naming a facet
    when it has several clauses (at most :data:`MAX_CLAUSES`). ``query``: the text's query vector
    by ``embedder``, when the turn has it — used when ``embedder`` is its own subject model."""
    model = subject_embedder(embedder)
    given = query is not None and model is embedder
    vector = np.asarray(query, dtype=np.float32) if given else model.embed_query(text)
    parts = facet_clauses(text)[:MAX_CLAUSES]
    return Subject(vector, tuple(Clause(facets, model.embed_query(part)) for part, facets in parts))


def _f16(vector: Vector) -> str:
    unit = np.asarray(vector, dtype=np.float32)
    unit = unit / max(float(np.linalg.norm(unit)), 1e-9)
    return base64.b64encode(unit.astype("<f2").tobytes()).decode("ascii")


def _vector(model: Embedder, entry: Any) -> Vector | None:
    try:
        raw = np.frombuffer(base64.b64decode(str(entry.get("f16", "")), validate=True), dtype="<f2")
    except (ValueError, TypeError):
        return None
    return raw.astype(np.float32) if raw.size == model.dim else None


def encoded(embedder: Embedder, text: str, subject: Subject) -> dict[str, Any]:
    """The data entry for ``subject``, the subject of ``text`` by ``embedder``."""
    return {"embedder": subject_embedder(embedder).name, "text": _digest(text), "f16": _f16(subject.vector),
            "clauses": [{"facets": sorted(c.facets), "f16": _f16(c.vector)} for c in subject.clauses]}  # fmt: skip


def decoded(embedder: Embedder, record: MemoryRecord) -> Subject | None:
    """The subject a record keeps, if it keeps one of ``embedder`` for its text (with its clauses:
    an entry kept before clauses were is not whole)."""
    entry, model = (record.data or {}).get(FIELD), subject_embedder(embedder)
    if not isinstance(entry, dict) or entry.get("embedder") != model.name or entry.get("text") != _digest(record.content):
        return None
    vector, parts = _vector(model, entry), entry.get("clauses")
    if vector is None or not isinstance(parts, list):
        return None
    clauses = [(p, _vector(model, p)) for p in parts if isinstance(p, dict)]
    if len(clauses) != len(parts) or any(v is None or not isinstance(p.get("facets"), list) for p, v in clauses):
        return None
    return Subject(vector, tuple(Clause(frozenset(map(str, p["facets"])), v) for p, v in clauses if v is not None))


def subjects(memory: Memory, records: Sequence[MemoryRecord]) -> list[Subject]:
    """Each record's subject: kept, or embedded now from its text and kept from now on."""
    kept = [decoded(memory.embedder, r) for r in records]
    made = embedded(memory.embedder, [r for r, v in zip(records, kept, strict=True) if v is None])
    keep(memory, made)
    return [v if v is not None else made[r.id][1] for r, v in zip(records, kept, strict=True)]


def embedded(embedder: Embedder, records: Sequence[MemoryRecord]) -> dict[str, tuple[MemoryRecord, Subject]]:
    """The subjects of ``records``, embedded now (:func:`about`)."""
    return {r.id: (r, about(embedder, r.content)) for r in records}


def keep(memory: Memory, made: dict[str, tuple[MemoryRecord, Subject]]) -> None:
    """Write embedded subjects into their records' data (one user's)."""
    if made:
        user_id = next(iter(made.values()))[0].user_id
        memory.store.put_data(user_id, {i: entry(memory.embedder, r.content, v) for i, (r, v) in made.items()})


def entry(embedder: Embedder, text: str, subject: Subject | None = None) -> dict[str, Any]:
    """What a statement's data keeps of its subject (``subject``, or embedded now: :func:`about`),
    to write with it — embedded before the memory lock is taken."""
    return {FIELD: encoded(embedder, text, about(embedder, text) if subject is None else subject)}
