"""Dense vectors in Qdrant Edge: Qdrant's own engine in this process, one shard per data home.

One shard holds every user's vectors, each point tagged with its user in a tenant payload index;
every read and write is filtered by that user. Measured (``tianma bench vectors --full``, README
"Memory"): a filtered top-30 over 100k points is 7.6 ms p50 for one user owning all of them and
0.73 ms when the user owns 10k, against 0.64 ms in a shard of that user alone — not worth a
folder, a write-ahead log and a thread pool per user.

The shard's segments stay *plain* (exact search): Edge 0.9 builds its HNSW graph in
``optimize()``, which holds the GIL for the whole build (52 s at 100k points, measured), and
would freeze every turn of the process — so the shard is configured never to build one, and
``optimize()`` only vacuums deleted points (:meth:`EdgeVectorIndex.compact`, after a forget).
Exact search is what the measurement above is of.

The shard is locked by its write-ahead log: one process at a time. Only record ids (UUIDs) and
the user id are stored with a vector — never text.
"""

from __future__ import annotations

import shutil
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from tianma.errors import BackendUnavailableError, ConfigError
from tianma.storage.protocols import Matrix, Vector, check_dimension, index_in_use

USER_FIELD = "user_id"
NEVER_INDEX_KB = 1 << 40
"""Segment size from which Edge would build HNSW: never (see the module's docstring)."""
_BATCH = 1024
_PAGE = 1024


@contextmanager
def _map_errors(path: Path) -> Iterator[None]:
    """Edge raises bare ``Exception``; turn the ones a user can act on into tianma errors."""
    try:
        yield
    except (BackendUnavailableError, ConfigError):
        raise
    except Exception as exc:
        text = str(exc)
        if "WAL" in text and "WouldBlock" in text:
            raise index_in_use(path) from exc
        if "ncompatible" in text or "dimension" in text.lower():
            raise ConfigError(
                f"the vector index in {path} was built for another embedder ({text}); run "
                "`tianma index rebuild` / 向量索引与当前嵌入模型不符，请运行 `tianma index rebuild`"
            ) from exc
        raise BackendUnavailableError(f"vector index {path}: {text}") from exc


def _of_user(user_id: str, ids: Sequence[str] | None = None) -> qe.Filter:
    owner = qe.FieldCondition(key=USER_FIELD, match=qe.MatchValue(user_id))
    if ids is None:
        return qe.Filter(must=[owner])
    return qe.Filter(must=[owner, qe.HasIdCondition({uuid.UUID(i) for i in ids})])


def open_shard(path: Path, config: qe.EdgeConfig) -> qe.EdgeShard:
    """Load the shard at ``path``, or create it with its tenant ``user_id`` payload index."""
    with _map_errors(path):
        if (path / "edge_config.json").is_file():
            return qe.EdgeShard.load(str(path), config)
        path.mkdir(parents=True, exist_ok=True)
        shard = qe.EdgeShard.create(str(path), config)
        shard.update(qe.UpdateOperation.create_field_index(USER_FIELD, qe.KeywordIndexParams(is_tenant=True)))
        return shard


class EdgeVectorIndex:
    """A :class:`~tianma.storage.protocols.VectorIndex` in one Qdrant Edge shard at ``path``."""

    def __init__(self, path: Path, dim: int) -> None:
        self._path = path
        self._dim = dim
        self._lock = threading.RLock()  # drop_all swaps the shard under the other calls
        self._shard = self._open()
        self._closed = False

    def _config(self) -> qe.EdgeConfig:
        return qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=self._dim, distance=qe.Distance.Dot),
            max_search_threads=1,  # one core per search: the turn runs beside others
            # optimize() only vacuums (compact): never an HNSW build, any deleted point counts
            optimizers=qe.EdgeOptimizersConfig(
                deleted_threshold=0.0, vacuum_min_vector_number=1, indexing_threshold=NEVER_INDEX_KB
            ),
        )

    def _open(self) -> qe.EdgeShard:
        return open_shard(self._path, self._config())

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Matrix) -> None:
        if not ids:
            return
        check_dimension(self._dim, vectors)
        payload = {USER_FIELD: user_id}
        with self._lock, _map_errors(self._path):
            for start in range(0, len(ids), _BATCH):
                rows = vectors[start : start + _BATCH].tolist()
                points = [qe.Point(i, row, payload) for i, row in zip(ids[start : start + _BATCH], rows, strict=True)]
                self._shard.update(qe.UpdateOperation.upsert_points(points))

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._lock, _map_errors(self._path):
            self._shard.update(qe.UpdateOperation.delete_points_by_filter(_of_user(user_id, ids)))

    def drop_user(self, user_id: str) -> None:
        with self._lock, _map_errors(self._path):
            self._shard.update(qe.UpdateOperation.delete_points_by_filter(_of_user(user_id)))

    def drop_all(self) -> None:
        """Start again from an empty shard (before a rebuild; also when the embedder changed)."""
        with self._lock, _map_errors(self._path):
            self._shard.close()
            shutil.rmtree(self._path)
            self._shard = self._open()

    def search(self, user_id: str, vector: Vector, limit: int) -> list[tuple[str, float]]:
        request = qe.QueryRequest(
            limit=limit, query=qe.Query.Nearest(vector.tolist()), filter=_of_user(user_id), with_payload=False
        )
        with self._lock, _map_errors(self._path):
            points = self._shard.query(request)
        return [(str(p.id), float(p.score)) for p in points]

    def get_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        if not ids:
            return {}
        with self._lock, _map_errors(self._path):
            records = self._shard.retrieve([uuid.UUID(i) for i in ids], with_payload=True, with_vector=True)
        return {
            str(r.id): np.asarray(r.vector, dtype=np.float32)
            for r in records if r.payload and r.payload.get(USER_FIELD) == user_id
        }  # fmt: skip

    def count(self, user_id: str) -> int:
        with self._lock, _map_errors(self._path):
            return int(self._shard.count(qe.CountRequest(exact=True, filter=_of_user(user_id))))

    def ids(self, user_id: str) -> set[str]:
        found: set[str] = set()
        offset = None
        with self._lock, _map_errors(self._path):
            while True:
                request = qe.ScrollRequest(offset=offset, limit=_PAGE, filter=_of_user(user_id), with_payload=False)
                records, offset = self._shard.scroll(request)
                found.update(str(r.id) for r in records)
                if offset is None:
                    return found

    def compact(self) -> None:
        """Rewrite segments that hold deleted points, so a forgotten record's vector is gone from
        the disk too (Edge only marks it deleted). Holds the process for its length: ~1 s for a
        segment of 100k points (``tianma bench vectors --full``)."""
        with self._lock, _map_errors(self._path):
            self._shard.optimize()
            self._shard.flush()

    def flush(self) -> None:
        """Write what the write-ahead log holds into the segments."""
        with self._lock, _map_errors(self._path):
            self._shard.flush()

    def close(self) -> None:
        with self._lock, _map_errors(self._path):
            if not self._closed:
                self._closed = True
                self._shard.flush()
                self._shard.close()
