"""The import pipeline and the memory lock: what it embeds, it embeds before taking it."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from tests.conftest import RuntimeFactory
from tianma.importing.messages import ImportedMessage
from tianma.importing.turns import ImportTurn
from tianma.memory.subject_vectors import decoded
from tianma.storage.protocols import Embedder

D0 = datetime(2024, 3, 2, 9, tzinfo=UTC)
SAID = ("plain text only, no formatting, I read you in a terminal",
        "give me headers and bold text, i'm reading your answers in obsidian now and they render nicely")  # fmt: skip


class _CountedLock:
    """A re-entrant lock that knows whether it is held."""

    def __init__(self) -> None:
        self._lock, self.depth = threading.RLock(), 0

    def __enter__(self) -> None:
        self._lock.acquire()
        self.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        self._lock.release()


class _Watched:
    """An embedder that counts the texts it embeds while ``lock`` is held."""

    def __init__(self, inner: Embedder, lock: _CountedLock) -> None:
        self.inner, self.lock, self.under_lock = inner, lock, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_query(self, text: str) -> Any:
        self.under_lock += self.lock.depth > 0
        return self.inner.embed_query(text)

    def embed_passages(self, texts: Any) -> Any:
        self.under_lock += len(texts) if self.lock.depth > 0 else 0
        return self.inner.embed_passages(texts)


def test_an_import_embeds_its_statements_before_it_takes_the_lock(make_runtime: RuntimeFactory, e5: Embedder) -> None:
    rt = make_runtime()
    lock = _CountedLock()
    watched = _Watched(e5, lock)
    importer = replace(rt.importer(), memory=replace(rt.memory, embedder=cast(Embedder, watched)),
                       lock=cast(threading.RLock, lock))  # fmt: skip
    turns = [ImportTurn(ImportedMessage(f"m{i}", "d0", "user", text, D0 + timedelta(days=i), f"line {i}"))
             for i, text in enumerate(SAID)]  # fmt: skip
    out = importer.store("u", turns, "t1")

    assert out.statements == 2 and out.closed == 1  # the change said beside its reason closes the old wish
    assert watched.under_lock == 0
    older, newer = sorted(rt.memories("u", kind="event"), key=lambda r: r.at or D0)
    assert older.data.get("closed_by") == newer.id
    kept = decoded(e5, newer)
    assert kept is not None and [c.facets for c in kept.clauses] == [frozenset({"format"})]
