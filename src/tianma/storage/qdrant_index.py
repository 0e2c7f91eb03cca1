"""Dense vectors in Qdrant: embedded local mode (a folder) by default, a server by URL.

One collection per user: local mode evaluates payload filters in Python (~9 µs a point), so
a ``user_id`` filter over one shared collection would cost ~0.9 s at 100k points. Vectors are
L2-normalised and stored with DOT distance, which local mode computes as one matrix product
(COSINE re-normalises every stored vector on every query).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from tianma.errors import BackendUnavailableError, ConfigError
from tianma.storage.protocols import Matrix, Vector, check_dimension, index_in_use

_BATCH = 1024


@contextmanager
def map_qdrant_errors() -> Iterator[None]:
    """Re-raise Qdrant client failures as tianma errors."""
    try:
        with warnings.catch_warnings():
            # Measured here: local mode is fast enough for one user's active records.
            warnings.filterwarnings("ignore", message="Local mode is not recommended")
            # the tenant index a server uses (qdrant_tenants) is a no-op in local mode, where tests run it
            warnings.filterwarnings("ignore", message="Payload indexes have no effect in the local Qdrant")
            yield
    except (ResponseHandlingException, UnexpectedResponse, ConnectionError) as exc:
        raise BackendUnavailableError(f"vector index: {exc}") from exc


def is_locked(path: Path) -> bool:
    """Whether another client holds local mode's lock on the folder ``path`` (one client per
    folder). Asked before opening one: a client that fails to lock leaks the lock file's handle."""
    lock = path / ".lock"
    if not lock.is_file():
        return False
    import portalocker  # qdrant-client's own dependency; imported late, as qdrant-client does

    with lock.open("r+") as handle:
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            return True
        portalocker.unlock(handle)
    return False


def ensure_collection(client: QdrantClient, name: str, dim: int) -> bool:
    """Create collection ``name`` for ``dim``-d vectors (DOT distance); ``True`` when created.

    Raises:
        ConfigError: it exists with vectors of another size (built for another embedder).
    """
    if client.collection_exists(name):
        size = getattr(client.get_collection(name).config.params.vectors, "size", None)
        if size != dim:
            raise ConfigError(
                f"the vector index was built with {size}-d vectors, the embedder makes {dim}-d ones; "
                "run `tianma index rebuild`"
            )
        return False
    client.create_collection(name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.DOT))
    return True


class QdrantVectorIndex:
    """A :class:`~tianma.storage.protocols.VectorIndex` over per-user Qdrant collections."""

    def __init__(self, client: QdrantClient, dim: int, prefix: str = "tianma") -> None:
        self._client = client
        self._dim = dim
        self._prefix = prefix
        self._known: set[str] = set()

    @classmethod
    def from_options(
        cls,
        *,
        dim: int,
        path: Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        prefix: str = "tianma",
    ) -> QdrantVectorIndex:
        """Open local mode at ``path`` or a server at ``url``.

        Raises:
            BackendUnavailableError: the folder is locked by another process, or the server is down.
        """
        try:
            if url:
                client = QdrantClient(url=url, api_key=api_key)
                client.get_collections()
            elif path is not None:
                path.mkdir(parents=True, exist_ok=True)
                if is_locked(path):
                    raise RuntimeError(f"{path}/.lock is held")
                client = QdrantClient(path=str(path))
            else:
                client = QdrantClient(location=":memory:")
        except RuntimeError as exc:  # local mode: "already accessed by another instance"
            raise index_in_use(path, str(exc)) from exc
        except (ResponseHandlingException, UnexpectedResponse) as exc:
            raise BackendUnavailableError(f"Qdrant server {url} unreachable: {exc}") from exc
        return cls(client, dim=dim, prefix=prefix)

    def collection(self, user_id: str) -> str:
        """The collection that holds one user's vectors."""
        return f"{self._prefix}_{hashlib.sha1(user_id.encode('utf-8')).hexdigest()[:24]}"

    def _ensure(self, user_id: str) -> str:
        name = self.collection(user_id)
        if name in self._known:
            return name
        ensure_collection(self._client, name, self._dim)
        self._known.add(name)
        return name

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Matrix) -> None:
        if not ids:
            return
        check_dimension(self._dim, vectors)
        with map_qdrant_errors():
            name = self._ensure(user_id)
            for start in range(0, len(ids), _BATCH):
                batch = models.Batch(
                    ids=list(ids[start : start + _BATCH]),
                    vectors=vectors[start : start + _BATCH].tolist(),
                )
                self._client.upsert(name, batch, wait=True)

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        name = self.collection(user_id)
        with map_qdrant_errors():
            if ids and self._client.collection_exists(name):
                self._client.delete(name, models.PointIdsList(points=list(ids)), wait=True)

    def drop_user(self, user_id: str) -> None:
        name = self.collection(user_id)
        with map_qdrant_errors():
            if self._client.collection_exists(name):
                self._client.delete_collection(name)
        self._known.discard(name)

    def drop_all(self) -> None:
        """Remove every tianma collection (before a rebuild)."""
        with map_qdrant_errors():
            for col in self._client.get_collections().collections:
                if col.name.startswith(self._prefix + "_"):
                    self._client.delete_collection(col.name)
        self._known.clear()

    def search(self, user_id: str, vector: Vector, limit: int) -> list[tuple[str, float]]:
        name = self.collection(user_id)
        with map_qdrant_errors():
            if name not in self._known and not self._client.collection_exists(name):
                return []
            result = self._client.query_points(name, query=vector.tolist(), limit=limit, with_payload=False)
        return [(str(p.id), float(p.score)) for p in result.points]

    def get_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        name = self.collection(user_id)
        with map_qdrant_errors():
            if not ids or not self._client.collection_exists(name):
                return {}
            points = self._client.retrieve(name, list(ids), with_vectors=True, with_payload=False)
        return {str(p.id): np.asarray(p.vector, dtype=np.float32) for p in points}

    def count(self, user_id: str) -> int:
        name = self.collection(user_id)
        with map_qdrant_errors():
            if not self._client.collection_exists(name):
                return 0
            return int(self._client.count(name, exact=True).count)

    def ids(self, user_id: str) -> set[str]:
        name = self.collection(user_id)
        found: set[str] = set()
        with map_qdrant_errors():
            if not self._client.collection_exists(name):
                return found
            offset = None
            while True:
                points, offset = self._client.scroll(
                    name, limit=1024, offset=offset, with_payload=False, with_vectors=False
                )
                found.update(str(p.id) for p in points)
                if offset is None:
                    return found

    def compact(self) -> None:
        """Nothing to ask: a server compacts on its own; local mode (kept for moving an older home
        into Edge) leaves deleted points in its SQLite free pages."""

    def close(self) -> None:
        self._client.close()
