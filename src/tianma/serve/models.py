"""Which models Ollama has, so a chat naming one it lacks is refused before its turn starts.

The names come from Ollama's ``/api/tags`` and are kept for :data:`CACHE_S` seconds; a name
not among them reads the list again at once (a model pulled a second ago works). Names match
as Ollama matches them: ``qwen2.5`` is ``qwen2.5:latest`` (and ``library/qwen2.5``,
``registry.ollama.ai/library/qwen2.5``), in any case. When the list cannot be read (Ollama
down, slow, an odd answer) nothing is refused: the turn then fails as it always did.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from tianma.errors import ModelNotFoundError
from tianma.serve.upstream import Upstream, hint_for

logger = logging.getLogger("tianma.serve")

CACHE_S = 30.0
"""How long a read of Ollama's model list is trusted."""
TAGS_TIMEOUT_S = 5.0
"""How long to wait for ``/api/tags`` (past that, the request goes on unchecked)."""
_HOST, _NAMESPACE, _TAG = "registry.ollama.ai", "library", "latest"


def model_key(name: str) -> str:
    """The name in full (``host/namespace/model:tag``, lower case): two names Ollama takes for
    the same model have the same key."""
    parts = name.strip().lower().split("/")
    last = parts[-1] if ":" in parts[-1] else f"{parts[-1]}:{_TAG}"
    head = parts[:-1]
    if len(head) == 0:
        head = [_HOST, _NAMESPACE]
    elif len(head) == 1:
        head = [_HOST, *head]
    return "/".join([*head, last])


def not_found(model: str) -> ModelNotFoundError:
    """Ollama's own 404 for a model it lacks (with the ``ollama pull`` hint)."""
    error = f"model '{model}' not found"
    return ModelNotFoundError(error, hint=hint_for(404, error, model))


class InstalledModels:
    """The models of one Ollama daemon, read from its ``/api/tags`` and cached (one per server).

    Args:
        upstream: the daemon (its async client reads the list, on the event loop).
        cache_s: how long a read is trusted.
        clock: seconds, monotonic (tests move it).
    """

    def __init__(self, upstream: Upstream, cache_s: float = CACHE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.upstream = upstream
        self.cache_s = cache_s
        self._clock = clock
        self._keys: frozenset[str] | None = None
        self._read_at = 0.0
        self._reading: asyncio.Task[frozenset[str] | None] | None = None

    async def check(self, model: str) -> None:
        """Return when Ollama has ``model`` or its list cannot be read.

        Raises:
            ModelNotFoundError: a fresh read of Ollama's list does not have it.
        """
        if "@" in model:  # pinned by digest: Ollama resolves that itself
            return
        key, keys = model_key(model), self._keys
        if keys is not None and key in keys and self._clock() - self._read_at < self.cache_s:
            return
        keys = await self._read()
        if keys is not None and key not in keys:
            raise not_found(model)

    async def _read(self) -> frozenset[str] | None:
        """A new read of the list (requests arriving meanwhile share it); None when it failed."""
        task = self._reading
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            task = self._reading = asyncio.ensure_future(self._fetch())
        return await asyncio.shield(task)  # a request cancelled meanwhile leaves the read to the others

    async def _fetch(self) -> frozenset[str] | None:
        try:
            answer = await self.upstream.aio.get("/api/tags", timeout=TAGS_TIMEOUT_S)
            answer.raise_for_status()
            rows: Any = answer.json().get("models")
            keys = frozenset(model_key(str(row[field])) for row in rows for field in ("name", "model")
                             if isinstance(row.get(field), str) and row[field])  # fmt: skip
        except Exception as exc:  # unreachable, an error status, not the JSON expected: go on unchecked
            logger.debug("could not read Ollama's models at %s: %s", self.upstream.base_url, exc)
            return None
        self._keys, self._read_at = keys, self._clock()
        return keys
