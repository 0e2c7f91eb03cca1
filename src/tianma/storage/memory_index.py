"""Dense vectors in a dict: the reference :class:`~tianma.storage.protocols.VectorIndex`.

Exact search by one matrix product, nothing on disk. The index contract suite runs every other
implementation beside it; tests that need no files may use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tianma.storage.protocols import Matrix, Vector, check_dimension


class InMemoryVectorIndex:
    """Vectors per user, in memory, L2-normalised vectors compared by dot product."""

    def __init__(self, dim: int) -> None:
        self._dim = dim
        self._users: dict[str, dict[str, Vector]] = {}

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Matrix) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        check_dimension(self._dim, vectors)
        rows = self._users.setdefault(user_id, {})
        for record_id, vector in zip(ids, vectors, strict=True):
            rows[record_id] = vector.copy()

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        rows = self._users.get(user_id, {})
        for record_id in ids:
            rows.pop(record_id, None)

    def drop_user(self, user_id: str) -> None:
        self._users.pop(user_id, None)

    def drop_all(self) -> None:
        self._users.clear()

    def search(self, user_id: str, vector: Vector, limit: int) -> list[tuple[str, float]]:
        rows = self._users.get(user_id)
        if not rows:
            return []
        ids = list(rows)
        scores = np.vstack([rows[i] for i in ids]) @ np.asarray(vector, dtype=np.float32)
        best = np.argsort(-scores, kind="stable")[:limit]
        return [(ids[i], float(scores[i])) for i in best]

    def get_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        rows = self._users.get(user_id, {})
        return {i: rows[i].copy() for i in ids if i in rows}

    def count(self, user_id: str) -> int:
        return len(self._users.get(user_id, {}))

    def ids(self, user_id: str) -> set[str]:
        return set(self._users.get(user_id, {}))

    def compact(self) -> None:
        """Nothing lingers."""

    def close(self) -> None:
        """Nothing to release."""
