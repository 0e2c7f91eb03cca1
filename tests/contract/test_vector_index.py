"""Every VectorIndex implementation passes this suite (Qdrant in memory and on disk)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tianma import ConfigError
from tianma.storage.protocols import VectorIndex
from tianma.storage.qdrant_index import QdrantVectorIndex

DIM = 8


def unit(*values: float) -> np.ndarray:
    vec = np.zeros(DIM, dtype=np.float32)
    vec[: len(values)] = values
    return vec / np.linalg.norm(vec)


@pytest.fixture(params=["memory", "path"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QdrantVectorIndex]:
    path = tmp_path / "qdrant" if request.param == "path" else None
    idx = QdrantVectorIndex.from_options(dim=DIM, path=path)
    yield idx
    idx.close()


def ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


def test_is_a_vector_index(index: QdrantVectorIndex) -> None:
    assert isinstance(index, VectorIndex)


def test_search_returns_nearest_first(index: QdrantVectorIndex) -> None:
    a, b, c = ids(3)
    index.upsert("u", [a, b, c], np.vstack([unit(1, 0), unit(1, 1), unit(0, 1)]))
    hits = index.search("u", unit(1, 0.1), limit=3)
    assert [h[0] for h in hits] == [a, b, c]
    assert hits[0][1] > hits[1][1] > hits[2][1]


def test_users_are_isolated(index: QdrantVectorIndex) -> None:
    (a,) = ids(1)
    index.upsert("alice", [a], np.vstack([unit(1)]))
    assert index.search("bob", unit(1), limit=5) == []
    assert index.count("bob") == 0 and index.count("alice") == 1


def test_upsert_replaces_delete_removes_and_drop_user_empties(index: QdrantVectorIndex) -> None:
    a, b = ids(2)
    index.upsert("u", [a, b], np.vstack([unit(1), unit(0, 1)]))
    index.upsert("u", [a], np.vstack([unit(0, 1)]))
    assert index.count("u") == 2
    np.testing.assert_allclose(index.get_vectors("u", [a])[a], unit(0, 1), atol=1e-6)
    index.delete("u", [b])
    assert [h[0] for h in index.search("u", unit(0, 1), limit=5)] == [a]
    index.drop_user("u")
    assert index.count("u") == 0
    assert index.search("u", unit(1), limit=5) == []


def test_ids_are_exactly_the_stored_ones(index: QdrantVectorIndex) -> None:
    a, b, c = ids(3)
    assert index.ids("u") == set()
    index.upsert("u", [a, b, c], np.vstack([unit(1), unit(0, 1), unit(1, 1)]))
    index.delete("u", [b])
    assert index.ids("u") == {a, c} and index.ids("other") == set()
    many = ids(2500)  # more than one page of the scroll
    index.upsert("big", many, np.vstack([unit(1)] * len(many)))
    assert index.ids("big") == set(many)


def test_dimension_change_asks_for_a_rebuild(tmp_path: Path) -> None:
    first = QdrantVectorIndex.from_options(dim=DIM, path=tmp_path / "q")
    first.upsert("u", ids(1), np.vstack([unit(1)]))
    first.close()
    second = QdrantVectorIndex.from_options(dim=DIM * 2, path=tmp_path / "q")
    with pytest.raises(ConfigError, match="index rebuild"):
        second.upsert("u", ids(1), np.ones((1, DIM * 2), dtype=np.float32) / np.sqrt(DIM * 2))
    second.close()
