"""Values computed once per embedder: cached per process, shipped for the default embedder.

Some vectors the runtime needs depend only on the embedder and a shipped file (the statement
model's weights, the background statements, the subject labels). Computing them with e5 takes
seconds, and the first turn of every new runtime paid that inside the reply. For the default
embedder they are shipped beside their source file as ``<name>.<embedder>.npz`` with the
source's sha256; any other embedder (or an edited source) computes them once per process.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from tianma.storage.protocols import Embedder

T = TypeVar("T")


class PerEmbedder(Generic[T]):
    """``make(embedder)`` computed once per embedder object, thread-safe.

    Keyed by ``id``, not by hash: a plugin's embedder may be an unhashable object (a dataclass
    with eq). The embedder is held weakly when it allows it, so a recycled id is never mistaken
    for the old embedder."""

    def __init__(self, make: Callable[[Embedder], T]) -> None:
        self._make = make
        self._values: dict[int, tuple[weakref.ref[Embedder] | Embedder, T]] = {}
        self._lock = threading.Lock()

    def get(self, embedder: Embedder) -> T:
        with self._lock:
            cached = self._values.get(id(embedder))
            if cached is not None:
                holder, value = cached
                if holder is embedder or (isinstance(holder, weakref.ref) and holder() is embedder):
                    return value
            value = self._make(embedder)
            try:
                ref: weakref.ref[Embedder] | Embedder = weakref.ref(embedder)
            except TypeError:  # no weak references (__slots__): keep it, one per embedder
                ref = embedder
            self._values[id(embedder)] = (ref, value)
            return value


def shipped_path(directory: Path, stem: str, embedder_name: str) -> Path:
    """Where the shipped values of ``stem`` for an embedder live."""
    return directory / f"{stem}.{re.sub(r'[^A-Za-z0-9_.-]+', '_', embedder_name)}.npz"
