"""Contracts of the memory backends."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
"""A 1-D float32 embedding, L2-normalised."""
Matrix = npt.NDArray[np.float32]
"""Row-stacked embeddings, each L2-normalised."""


@runtime_checkable
class Embedder(Protocol):
    """Turns text into normalised vectors; queries and passages may be encoded differently."""

    @property
    def name(self) -> str:
        """The model's name (for spans)."""
        ...

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    def embed_query(self, text: str) -> Vector:
        """The vector of a search query."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        """The vectors of stored texts, one row each."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Dense vectors of one user's indexed records; derived data, rebuilt from SQL."""

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Matrix) -> None:
        """Add or replace vectors."""
        ...

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Remove vectors."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Remove every vector of a user."""
        ...

    def search(self, user_id: str, vector: Vector, limit: int) -> list[tuple[str, float]]:
        """``(id, similarity)`` of the nearest vectors, best first."""
        ...

    def get_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by id (missing ids are absent)."""
        ...

    def count(self, user_id: str) -> int:
        """Vectors stored for a user."""
        ...

    def ids(self, user_id: str) -> set[str]:
        """The ids of every vector stored for a user (``tianma doctor`` compares them with SQL)."""
        ...

    def close(self) -> None:
        """Release the client."""
        ...


@runtime_checkable
class KeywordIndex(Protocol):
    """BM25 keyword search over records' tokenised text; derived data, rebuilt from SQL.

    Record ids are global: a record belongs to the user it was last upserted for.
    """

    def upsert(self, user_id: str, items: Iterable[tuple[str, str]]) -> None:
        """Index ``(record_id, text)`` pairs of a user, replacing earlier entries of those ids."""
        ...

    def delete(self, record_ids: Sequence[str]) -> None:
        """Remove entries by record id, whoever owns them; unknown ids are a no-op."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Remove every entry of this user and no other's."""
        ...

    def optimize(self) -> None:
        """Compact storage so deleted text is physically gone (a no-op where nothing lingers)."""
        ...

    def clear(self) -> None:
        """Remove every entry of every user (before a rebuild)."""
        ...

    def ids(self, user_id: str) -> set[str]:
        """The record ids of a user's entries (``tianma doctor`` compares them with SQL)."""
        ...

    def count(self, user_id: str) -> int:
        """How many entries a user has."""
        ...

    def search(
        self, user_id: str, query_tokens: Sequence[str], limit: int, *, others: bool = False
    ) -> list[tuple[str, float]]:
        """``(record_id, score > 0)`` sharing a query token, best first; ``others``: all other users'."""
        ...
