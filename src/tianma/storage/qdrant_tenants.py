"""Dense vectors on a Qdrant server, in the layout a server wants for many users: one collection,
each point tagged with its user in a ``user_id`` keyword payload index marked ``is_tenant`` (the
server then keeps each tenant's points together and plans a user's filtered search per tenant).

Qdrant's guide for multitenancy recommends this over a collection per user, which costs the
server memory and file handles per collection. Point ids are the record ids (UUIDs, global): a
record upserted for another user moves to them. Every read and delete is filtered by user.
Runs against a server by URL; the contract suite runs it on qdrant-client's local mode, which
speaks the same API (and evaluates the filter in Python: slow beyond tests).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from tianma.errors import BackendUnavailableError
from tianma.storage.protocols import Matrix, Vector, check_dimension
from tianma.storage.qdrant_index import ensure_collection, map_qdrant_errors

_BATCH = 1024
TENANT = "user_id"


def _of(user_id: str) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key=TENANT, match=models.MatchValue(value=user_id))])


class QdrantTenantIndex:
    """A :class:`~tianma.storage.protocols.VectorIndex` over one shared, tenant-indexed collection."""

    def __init__(self, client: QdrantClient, dim: int, prefix: str = "tianma") -> None:
        self._client = client
        self._dim = dim
        self.collection = f"{prefix}_points"
        self._ready = False

    @classmethod
    def connect(cls, dim: int, url: str, api_key: str | None = None, prefix: str = "tianma") -> QdrantTenantIndex:
        """The index on the server at ``url``.

        Raises:
            BackendUnavailableError: the server is down.
        """
        try:
            client = QdrantClient(url=url, api_key=api_key)
            client.get_collections()
        except (ResponseHandlingException, UnexpectedResponse) as exc:
            raise BackendUnavailableError(f"Qdrant server {url} unreachable: {exc}") from exc
        return cls(client, dim, prefix)

    def _ensure(self) -> None:
        if self._ready:
            return
        if ensure_collection(self._client, self.collection, self._dim):
            self._client.create_payload_index(
                self.collection, TENANT,
                field_schema=models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
            )  # fmt: skip
        self._ready = True

    def _exists(self) -> bool:
        return self._ready or self._client.collection_exists(self.collection)

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Matrix) -> None:
        if not ids:
            return
        check_dimension(self._dim, vectors)
        with map_qdrant_errors():
            self._ensure()
            for start in range(0, len(ids), _BATCH):
                chunk: list[models.ExtendedPointId] = list(ids[start : start + _BATCH])
                batch = models.Batch(
                    ids=chunk, vectors=vectors[start : start + _BATCH].tolist(), payloads=[{TENANT: user_id}] * len(chunk)
                )
                self._client.upsert(self.collection, batch, wait=True)

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        with map_qdrant_errors():
            if ids and self._exists():
                selector = models.FilterSelector(
                    filter=models.Filter(must=[*(_of(user_id).must or []), models.HasIdCondition(has_id=list(ids))])
                )
                self._client.delete(self.collection, selector, wait=True)

    def drop_user(self, user_id: str) -> None:
        with map_qdrant_errors():
            if self._exists():
                self._client.delete(self.collection, models.FilterSelector(filter=_of(user_id)), wait=True)

    def drop_all(self) -> None:
        """Remove the collection (before a rebuild)."""
        with map_qdrant_errors():
            if self._client.collection_exists(self.collection):
                self._client.delete_collection(self.collection)
        self._ready = False

    def search(self, user_id: str, vector: Vector, limit: int) -> list[tuple[str, float]]:
        with map_qdrant_errors():
            if not self._exists():
                return []
            result = self._client.query_points(
                self.collection, query=vector.tolist(), query_filter=_of(user_id), limit=limit, with_payload=False
            )
        return [(str(p.id), float(p.score)) for p in result.points]

    def get_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        with map_qdrant_errors():
            if not ids or not self._exists():
                return {}
            points = self._client.retrieve(self.collection, list(ids), with_vectors=True, with_payload=True)
        return {
            str(p.id): np.asarray(p.vector, dtype=np.float32)
            for p in points
            if (p.payload or {}).get(TENANT) == user_id
        }

    def count(self, user_id: str) -> int:
        with map_qdrant_errors():
            if not self._exists():
                return 0
            return int(self._client.count(self.collection, count_filter=_of(user_id), exact=True).count)

    def ids(self, user_id: str) -> set[str]:
        found: set[str] = set()
        with map_qdrant_errors():
            if not self._exists():
                return found
            offset = None
            while True:
                points, offset = self._client.scroll(
                    self.collection, scroll_filter=_of(user_id), limit=1024, offset=offset,
                    with_payload=False, with_vectors=False,
                )  # fmt: skip
                found.update(str(p.id) for p in points)
                if offset is None:
                    return found

    def compact(self) -> None:
        """Nothing to ask: a server's optimizer vacuums deleted points on its own."""

    def close(self) -> None:
        self._client.close()
