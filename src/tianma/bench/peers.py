"""Peer memory systems as baselines: LangGraph's ``InMemoryStore`` and mem0 OSS (when installed).

The question a reader asks of tianma's recall numbers is "compared with what people would use
instead?". These peers answer it on equal terms: the same documents (one dataset turn each, as
``speaker: text``), the same embedder and the same cache, so any difference comes from how each
system stores and ranks, not from a better or worse embedding model.

e5 embeds queries and passages with different prefixes (``query:`` / ``passage:``); a peer that
embedded both the same way would be handicapped for a reason that has nothing to do with its
design. :class:`TianmaEmbeddings` therefore maps LangChain's ``embed_documents`` to
``embed_passages`` and ``embed_query`` to ``embed_query``, and mem0's embedder is told which of
the two it is asked for (its LangChain provider alone would embed everything as a query).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from tianma.bench.locomo import SystemFactory
from tianma.bench.locomo_data import Conversation
from tianma.bench.systems import CachingEmbedder, Doc, Hit, System
from tianma.storage.protocols import Embedder

INMEMORY_NAME = "LangGraph InMemoryStore (same embedder)"
MEM0_NAME = "mem0 OSS (infer=False, same embedder)"

MEM0_INSTALL = "pip install mem0ai langchain"
"""mem0's LangChain embedder provider imports ``langchain`` (not only ``langchain-core``)."""

UNREACHABLE_URL = "http://127.0.0.1:9/v1"
"""Where mem0's (never used) LLM client points: the discard port, so a stray call fails at once."""


class TianmaEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over a tianma embedder, keeping e5's query/passage distinction.

    Both peers take LangChain embeddings; wrapping the benchmark's own (caching) embedder makes
    them embed exactly the vectors tianma and the dense baseline use, and reuse the cache.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Stored texts: passages."""
        return [[float(x) for x in row] for row in self.embedder.embed_passages(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Search texts: queries."""
        return [float(x) for x in self.embedder.embed_query(text)]


class _UserLabels:
    """Stable, store-safe labels for user ids.

    LangGraph namespaces reject ``.`` and mem0 rejects whitespace in entity ids; dataset user ids
    are free-form, so each system keys users by ``u<n>`` instead.
    """

    def __init__(self) -> None:
        self._labels: dict[str, str] = {}

    def __call__(self, user: str) -> str:
        return self._labels.setdefault(user, f"u{len(self._labels)}")


# -- LangGraph InMemoryStore ----------------------------------------------------------------


class InMemoryStoreSystem:
    """LangGraph's ``InMemoryStore`` with its semantic index: what a LangGraph agent gets built in.

    Each turn is an item under the user's namespace with ``{"text": doc.line}`` indexed; search is
    the store's own (exact cosine over the namespace's items, max over indexed fields).
    """

    name = INMEMORY_NAME

    def __init__(self, embedder: Embedder) -> None:
        from langgraph.store.memory import InMemoryStore

        self.embeddings = TianmaEmbeddings(embedder)
        self.store = InMemoryStore(index={"dims": embedder.dim, "embed": self.embeddings, "fields": ["text"]})
        self._label = _UserLabels()

    def add(self, user: str, docs: Sequence[Doc]) -> None:
        """Batches of puts, so the store embeds many turns per ``embed_documents`` call.

        ``InMemoryStore.batch`` (langgraph 1.2) embeds each distinct text once but then expects
        one vector per item, so two items with the same text in one batch raise; LoCoMo repeats
        short turns ("John: Take care, bye!" in conv-47), so the n-th repeat of a text goes into
        the n-th batch.
        """
        from langgraph.store.base import PutOp

        namespace = (self._label(user),)
        rounds: list[list[PutOp]] = []
        seen: dict[str, int] = {}
        for d in docs:
            n = seen[d.line] = seen.get(d.line, -1) + 1
            if n == len(rounds):
                rounds.append([])
            rounds[n].append(PutOp(namespace, d.id, {"text": d.line}))
        for ops in rounds:
            self.store.batch(ops)

    def search(self, user: str, query: str, k: int) -> list[Hit]:
        items = self.store.search((self._label(user),), query=query, limit=k)
        return [Hit(frozenset({item.key}), str(item.value["text"])) for item in items]

    def close(self) -> None:
        self.store = type(self.store)()  # drop the items and vectors


# -- mem0 OSS -------------------------------------------------------------------------------


def mem0_missing() -> str | None:
    """Why the mem0 peer cannot run here, or ``None`` when it can."""
    if importlib.util.find_spec("mem0") is None:
        return f"not installed ({MEM0_INSTALL})"
    if importlib.util.find_spec("langchain") is None:
        return f"mem0 is installed but its LangChain embedder provider needs `langchain` ({MEM0_INSTALL})"
    return None


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def mem0_signals() -> list[str]:
    """Which of mem0's ranking signals are off here (its search degrades to dense-only without them).

    mem0 v2 adds BM25 (Qdrant sparse vectors from ``fastembed``) and entity boosts (spaCy) to the
    dense score when those packages are present; both need model downloads, so an offline
    benchmark runs without them, and the report must say so.
    """
    off = []
    if importlib.util.find_spec("fastembed") is None:
        off.append("BM25 off (fastembed not installed)")
    if importlib.util.find_spec("spacy") is None:
        off.append("entity boost off (spaCy not installed)")
    return off


def _import_mem0() -> Any:
    """Import mem0 with telemetry off and its home directory out of ``~``.

    mem0 reads ``MEM0_TELEMETRY`` once, at import, and would otherwise send PostHog events; it
    also creates ``~/.mem0`` at import unless ``MEM0_DIR`` says where. If mem0 was imported
    earlier with telemetry on, the module flags are switched off as well. Its warnings that
    fastembed/spaCy are missing are silenced: :func:`peer_status` reports them once instead of
    once per system, over the progress bars.
    """
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "tianma-bench-mem0"))
    import mem0.memory.main as main
    import mem0.memory.telemetry as telemetry

    main.MEM0_TELEMETRY = False
    telemetry.MEM0_TELEMETRY = False
    logging.getLogger("mem0").setLevel(logging.ERROR)
    return main


class _NoLLM:
    """Stands in for mem0's LLM: with ``infer=False`` it must never be asked anything."""

    def generate_response(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("mem0 called its LLM, but the benchmark adds with infer=False")


class _ActionAwareEmbedding:
    """mem0's LangChain embedder, told apart by ``memory_action``: add/update → passage, search → query.

    mem0 passes the action to ``embed`` but its LangChain provider ignores it and always calls
    ``embed_query``; with e5 that would store every turn with the query prefix.
    """

    def __init__(self, provider: Any, embeddings: TianmaEmbeddings) -> None:
        self.provider = provider
        self.config = provider.config
        self.embeddings = embeddings

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        if memory_action in ("add", "update"):
            return self.embeddings.embed_documents([text])[0]
        return list(self.provider.embed(text, memory_action))

    def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
        if memory_action in ("add", "update"):
            return self.embeddings.embed_documents(texts)
        return [self.embed(t, memory_action) for t in texts]


class Mem0System:
    """mem0 OSS as a plain memory store: ``add(..., infer=False)`` and its own ``search``.

    ``infer=False`` stores each message verbatim (no LLM extraction), which is the like-for-like
    comparison with tianma's LLM-free ingest. Qdrant runs in local mode in a temporary directory;
    every user shares one collection, scoped by ``user_id`` as mem0 does.
    """

    name = MEM0_NAME

    def __init__(self, embedder: Embedder) -> None:
        main = _import_mem0()
        self._tmp = tempfile.TemporaryDirectory(prefix="tianma-bench-mem0-")
        root = Path(self._tmp.name)
        self._embedder = embedder
        self.embeddings = TianmaEmbeddings(embedder)
        config: dict[str, Any] = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "bench",
                    "path": str(root / "qdrant"),
                    "embedding_model_dims": embedder.dim,
                    "on_disk": True,
                },
            },
            "embedder": {"provider": "langchain", "config": {"model": self.embeddings}},
            "llm": {
                "provider": "openai",
                "config": {"model": "unused", "api_key": "unused", "openai_base_url": UNREACHABLE_URL},
            },
            "history_db_path": str(root / "history.db"),
        }
        self.memory = main.Memory.from_config(config)
        self.memory.embedding_model = _ActionAwareEmbedding(self.memory.embedding_model, self.embeddings)
        self.memory.llm = _NoLLM()
        self._label = _UserLabels()
        self._doc_of: dict[str, str] = {}

    def add(self, user: str, docs: Sequence[Doc]) -> None:
        """All turns in one ``add`` call (mem0 then embeds and inserts them one by one).

        The turns are embedded first as one batch so mem0's per-message calls hit the cache;
        mem0 returns the new memories in message order, which maps memory ids back to turns.
        """
        if isinstance(self._embedder, CachingEmbedder):
            self._embedder.embed_passages([d.line for d in docs])
        messages = [{"role": d.role, "content": d.line} for d in docs]
        added = self.memory.add(messages, user_id=self._label(user), infer=False)["results"]
        if len(added) != len(docs):
            raise RuntimeError(f"mem0 stored {len(added)} of {len(docs)} turns for {user}")
        for doc, item in zip(docs, added, strict=True):
            if item["memory"] != doc.line:
                raise RuntimeError(f"mem0 returned memories out of order at {doc.id}")
            self._doc_of[str(item["id"])] = doc.id

    def search(self, user: str, query: str, k: int) -> list[Hit]:
        found = self.memory.search(query, top_k=k, filters={"user_id": self._label(user)})["results"]
        return [Hit(frozenset({self._doc_of[str(r["id"])]}), str(r["memory"])) for r in found]

    def close(self) -> None:
        self.memory.close()
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()  # releases the local Qdrant storage lock before the directory goes
        self._tmp.cleanup()


# -- registry -------------------------------------------------------------------------------


def peer_status(mode: str = "full") -> dict[str, str]:
    """Each peer and whether it runs here (with what) or why it is skipped, for reports."""
    status = {
        INMEMORY_NAME: f"runs (langgraph {_version('langgraph')}; exact cosine over the user's items)",
    }
    missing = mem0_missing()
    if missing is not None:
        status[MEM0_NAME] = f"skipped: {missing}"
    elif mode == "quick":
        status[MEM0_NAME] = (
            "skipped in quick mode (adds ~4 minutes on LoCoMo: one insert per message); run --full"
        )
    else:
        detail = ", ".join(
            [f"mem0ai {_version('mem0ai')}", "Qdrant local", "LangChain embedder provider", *mem0_signals()]
        )
        status[MEM0_NAME] = f"runs ({detail})"
    return status


def factories(embedder: CachingEmbedder, mode: str = "full") -> list[SystemFactory]:
    """Factories of the peers that can run here: InMemoryStore always, mem0 when installed
    (except in quick mode, which must fit in minutes)."""

    def inmemory(_convs: dict[str, Conversation]) -> System:
        return InMemoryStoreSystem(embedder)

    def mem0(_convs: dict[str, Conversation]) -> System:
        return Mem0System(embedder)

    out: list[SystemFactory] = [inmemory]
    if mem0_missing() is None and mode != "quick":
        out.append(mem0)
    return out
