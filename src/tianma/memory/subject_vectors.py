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

A statement that says it revises something is compared by a second subject model
(:data:`~tianma.memory.subject_model.REVISION`), so each statement keeps a vector of that model
too (``data["revision_vector"]``, the same form); a non-e5 embedder keeps one, its own.

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

from tianma.memory.embedders import EMBED_CHARS
from tianma.memory.service import Memory
from tianma.memory.subject_model import MODELS, REVISION, SUBJECT, Trained, subject_embedder
from tianma.policies.aspects import facet_clauses
from tianma.storage.protocols import Embedder, Vector
from tianma.storage.records import MemoryRecord

FIELD = "subject_vector"
"""Where a statement's data keeps its vector by :data:`~tianma.memory.subject_model.SUBJECT`."""
FIELDS = {SUBJECT: FIELD, REVISION: "revision_vector"}
"""Where a statement's data keeps its vector by each subject model."""


def models(embedder: Embedder) -> tuple[Trained, ...]:
    """The subject models statements of ``embedder`` keep vectors of: both for the bundled e5,
    else one (``embedder`` is its own subject model, whichever is asked for)."""
    return MODELS if subject_embedder(embedder, REVISION) is not subject_embedder(embedder) else (SUBJECT,)


def _field(embedder: Embedder, model: Trained) -> str:
    return FIELDS[model] if model in models(embedder) else FIELD


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


def about(embedder: Embedder, text: str, query: Vector | None = None, model: Trained = SUBJECT) -> Subject:
    """The subject of ``text`` by ``model`` for ``embedder`` (:func:`~tianma.memory.
    subject_model.subject_embedder`, ~20 ms), and one more query for each clause naming a facet
    when it has several clauses (at most :data:`MAX_CLAUSES`). ``query``: the text's query vector
    by ``embedder``, when the turn has it — used when ``embedder`` is its own subject model."""
    chosen = subject_embedder(embedder, model)
    given = query is not None and chosen is embedder
    vector = np.asarray(query, dtype=np.float32) if given else chosen.embed_query(text[:EMBED_CHARS])
    parts = facet_clauses(text)[:MAX_CLAUSES]
    return Subject(vector, tuple(Clause(facets, chosen.embed_query(part[:EMBED_CHARS])) for part, facets in parts))


Subjects = dict[Trained, Subject]
"""A statement's subject by each subject model its embedder keeps (:func:`models`)."""


def about_all(embedder: Embedder, text: str, query: Vector | None = None) -> Subjects:
    """The subject of ``text`` by every subject model ``embedder`` keeps (:func:`about`)."""
    return {model: about(embedder, text, query, model) for model in models(embedder)}


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


def encoded(embedder: Embedder, text: str, subject: Subject, model: Trained = SUBJECT) -> dict[str, Any]:
    """The data entry for ``subject``, the subject of ``text`` by ``model`` for ``embedder``."""
    return {"embedder": subject_embedder(embedder, model).name, "text": _digest(text), "f16": _f16(subject.vector),
            "clauses": [{"facets": sorted(c.facets), "f16": _f16(c.vector)} for c in subject.clauses]}  # fmt: skip


def decoded(embedder: Embedder, record: MemoryRecord, model: Trained = SUBJECT) -> Subject | None:
    """The subject by ``model`` a record keeps, if it keeps one for its text (with its clauses:
    an entry kept before clauses were is not whole)."""
    entry, chosen = (record.data or {}).get(_field(embedder, model)), subject_embedder(embedder, model)
    if not isinstance(entry, dict) or entry.get("embedder") != chosen.name or entry.get("text") != _digest(record.content):
        return None
    vector, parts = _vector(chosen, entry), entry.get("clauses")
    if vector is None or not isinstance(parts, list):
        return None
    clauses = [(p, _vector(chosen, p)) for p in parts if isinstance(p, dict)]
    if len(clauses) != len(parts) or any(v is None or not isinstance(p.get("facets"), list) for p, v in clauses):
        return None
    return Subject(vector, tuple(Clause(frozenset(map(str, p["facets"])), v) for p, v in clauses if v is not None))


def subjects(memory: Memory, records: Sequence[MemoryRecord], model: Trained = SUBJECT) -> list[Subject]:
    """Each record's subject by ``model``: kept, or embedded now from its text and kept from now on."""
    kept = [decoded(memory.embedder, r, model) for r in records]
    made = embedded(memory.embedder, [r for r, v in zip(records, kept, strict=True) if v is None], model)
    keep(memory, made, model)
    return [v if v is not None else made[r.id][1] for r, v in zip(records, kept, strict=True)]


def embedded(
    embedder: Embedder, records: Sequence[MemoryRecord], model: Trained = SUBJECT
) -> dict[str, tuple[MemoryRecord, Subject]]:
    """The subjects of ``records`` by ``model``, embedded now (:func:`about`)."""
    return {r.id: (r, about(embedder, r.content, model=model)) for r in records}


def keep(memory: Memory, made: dict[str, tuple[MemoryRecord, Subject]], model: Trained = SUBJECT) -> None:
    """Write subjects embedded by ``model`` into their records' data (one user's)."""
    if made:
        user_id = next(iter(made.values()))[0].user_id
        field = _field(memory.embedder, model)
        memory.store.put_data(
            user_id, {i: {field: encoded(memory.embedder, r.content, v, model)} for i, (r, v) in made.items()}
        )


def entry(embedder: Embedder, text: str, about_it: Subjects | None = None) -> dict[str, Any]:
    """What a statement's data keeps of its subject by each model (``about_it``, or embedded now:
    :func:`about_all`), to write with it — embedded before the memory lock is taken."""
    given = about_all(embedder, text) if about_it is None else about_it
    return {_field(embedder, m): encoded(embedder, text, subject, m) for m, subject in given.items()}
