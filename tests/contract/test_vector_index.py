"""Every VectorIndex implementation passes this suite: Qdrant Edge (the default), the in-memory
reference, and qdrant-client (in memory and local mode on disk: the protocol a Qdrant server speaks)
in both server layouts — a collection per user, and one collection with a ``user_id`` tenant index.
With ``TIANMA_TEST_QDRANT_URL`` set, both layouts also run against that real server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient

from tianma import ConfigError
from tianma.storage.edge_index import EdgeVectorIndex
from tianma.storage.memory_index import InMemoryVectorIndex
from tianma.storage.protocols import VectorIndex
from tianma.storage.qdrant_index import QdrantVectorIndex
from tianma.storage.qdrant_tenants import QdrantTenantIndex

DIM = 8


def unit(*values: float) -> np.ndarray:
    vec = np.zeros(DIM, dtype=np.float32)
    vec[: len(values)] = values
    return vec / np.linalg.norm(vec)


SERVER = os.environ.get("TIANMA_TEST_QDRANT_URL")
"""A real Qdrant server to run the server layouts against too (none can be installed where CI runs)."""
IMPLEMENTATIONS = ["edge", "reference", "qdrant-memory", "qdrant-path", "qdrant-tenants"] + (
    ["server-per-user", "server-tenants"] if SERVER else []
)


def open_index(kind: str, folder: Path, dim: int = DIM) -> VectorIndex:
    if kind == "edge":
        return EdgeVectorIndex(folder / "vectors", dim)
    if kind == "reference":
        return InMemoryVectorIndex(dim)
    prefix = f"t{uuid.uuid4().hex[:12]}"  # a server is shared: each test its own collections
    if kind == "qdrant-tenants":
        return QdrantTenantIndex(QdrantClient(location=":memory:"), dim)
    if kind == "server-tenants":
        return QdrantTenantIndex(QdrantClient(url=SERVER), dim, prefix=prefix)
    if kind == "server-per-user":
        return QdrantVectorIndex.from_options(dim=dim, url=SERVER, prefix=prefix)
    return QdrantVectorIndex.from_options(dim=dim, path=folder / "qdrant" if kind == "qdrant-path" else None)


@pytest.fixture(params=IMPLEMENTATIONS)
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    idx = open_index(request.param, tmp_path)
    yield idx
    idx.close()


def ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


def test_is_a_vector_index(index: VectorIndex) -> None:
    assert isinstance(index, VectorIndex)


def test_search_returns_nearest_first(index: VectorIndex) -> None:
    a, b, c = ids(3)
    index.upsert("u", [a, b, c], np.vstack([unit(1, 0), unit(1, 1), unit(0, 1)]))
    hits = index.search("u", unit(1, 0.1), limit=3)
    assert [h[0] for h in hits] == [a, b, c]
    assert hits[0][1] > hits[1][1] > hits[2][1]


def test_users_are_isolated(index: VectorIndex) -> None:
    (a,) = ids(1)
    index.upsert("alice", [a], np.vstack([unit(1)]))
    assert index.search("bob", unit(1), limit=5) == []
    assert index.count("bob") == 0 and index.count("alice") == 1


def test_upsert_replaces_delete_removes_and_drop_user_empties(index: VectorIndex) -> None:
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


def test_ids_are_exactly_the_stored_ones(index: VectorIndex) -> None:
    a, b, c = ids(3)
    assert index.ids("u") == set()
    index.upsert("u", [a, b, c], np.vstack([unit(1), unit(0, 1), unit(1, 1)]))
    index.delete("u", [b])
    assert index.ids("u") == {a, c} and index.ids("other") == set()
    many = ids(2500)  # more than one page of the scroll
    index.upsert("big", many, np.vstack([unit(1)] * len(many)))
    assert index.ids("big") == set(many)


@pytest.mark.parametrize("kind", ["edge", "qdrant-path"])
def test_dimension_change_asks_for_a_rebuild(kind: str, tmp_path: Path) -> None:
    first = open_index(kind, tmp_path)
    first.upsert("u", ids(1), np.vstack([unit(1)]))
    first.close()
    with pytest.raises(ConfigError, match="index rebuild"):
        second = open_index(kind, tmp_path, DIM * 2)  # Edge checks on open, local mode on write
        second.upsert("u", ids(1), np.ones((1, DIM * 2), dtype=np.float32) / np.sqrt(DIM * 2))
    if kind != "edge":
        second.close()


def test_a_wrong_sized_vector_is_refused(index: VectorIndex) -> None:
    with pytest.raises(ConfigError, match="index rebuild"):
        index.upsert("u", ids(1), np.ones((1, DIM + 1), dtype=np.float32))
    assert index.count("u") == 0


def test_delete_and_get_vectors_touch_only_their_user(index: VectorIndex) -> None:
    a, b = ids(2)
    index.upsert("alice", [a], np.vstack([unit(1)]))
    index.upsert("bob", [b], np.vstack([unit(0, 1)]))
    index.delete("bob", [a])  # not bob's: nothing happens
    assert index.get_vectors("bob", [a, b]).keys() == {b}
    assert index.ids("alice") == {a}
    index.drop_user("bob")
    assert index.ids("alice") == {a} and index.count("bob") == 0


def test_search_matches_the_exact_reference(index: VectorIndex) -> None:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((300, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    keys = ids(300)
    index.upsert("u", keys, rows)
    index.upsert("other", ids(50), rows[:50])
    reference = InMemoryVectorIndex(DIM)
    reference.upsert("u", keys, rows)
    for query in rows[:5] + 0.05:
        query /= np.linalg.norm(query)
        got, want = index.search("u", query, 10), reference.search("u", query, 10)
        assert [i for i, _ in got] == [i for i, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-5)


def test_drop_all_empties_every_user(index: VectorIndex) -> None:
    index.upsert("alice", ids(2), np.vstack([unit(1), unit(0, 1)]))
    index.upsert("bob", ids(1), np.vstack([unit(1)]))
    index.drop_all()
    assert index.count("alice") == index.count("bob") == 0
    index.upsert("alice", ids(1), np.vstack([unit(1)]))  # usable again after
    assert index.count("alice") == 1


def test_the_tenant_layout_keeps_one_collection_and_checks_its_dimension() -> None:
    client = QdrantClient(location=":memory:")
    index = QdrantTenantIndex(client, DIM, prefix="fam")
    a, b = ids(2)
    index.upsert("alice", [a], np.vstack([unit(1)]))
    index.upsert("bob", [b], np.vstack([unit(0, 1)]))
    assert [c.name for c in client.get_collections().collections] == ["fam_points"]
    index.upsert("bob", [a], np.vstack([unit(1)]))  # a record id is one point: upserted for bob, it is bob's
    assert index.ids("alice") == set() and index.ids("bob") == {a, b}
    with pytest.raises(ConfigError, match="index rebuild"):
        QdrantTenantIndex(client, DIM * 2, prefix="fam").upsert("u", ids(1), np.ones((1, DIM * 2), dtype=np.float32))
    index.close()
