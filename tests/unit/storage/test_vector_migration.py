"""An older home's vectors (qdrant-client local mode in ``<home>/qdrant``) move into Edge once."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from tianma.errors import BackendUnavailableError
from tianma.storage.edge_index import EdgeVectorIndex
from tianma.storage.qdrant_index import QdrantVectorIndex
from tianma.storage.vector_migration import is_local_mode, migrate_local_mode

DIM = 8


def rows(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    out = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def old_home(tmp_path: Path, dim: int = DIM) -> dict[str, dict[str, np.ndarray]]:
    """Two users' vectors in local mode, as the previous tianma wrote them."""
    old = QdrantVectorIndex.from_options(dim=dim, path=tmp_path / "qdrant")
    written: dict[str, dict[str, np.ndarray]] = {}
    for seed, (user, n) in enumerate({"alice": 1500, "鲍勃": 3}.items()):
        ids, vectors = [str(uuid.uuid4()) for _ in range(n)], rows(n, seed, dim)
        old.upsert(user, ids, vectors)
        written[user] = dict(zip(ids, vectors, strict=True))
    old.close()
    return written


def test_every_vector_moves_and_the_old_folder_goes(tmp_path: Path) -> None:
    written = old_home(tmp_path)
    seen: list[tuple[int, int]] = []
    moved = migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, ["alice", "鲍勃", "nobody"],
                               progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert moved == 1503
    assert seen[-1] == (1503, 1503) and len(seen) > 2  # told along the way
    assert not (tmp_path / "qdrant").exists() and not (tmp_path / "vectors.partial").exists()
    index = EdgeVectorIndex(tmp_path / "vectors", DIM)
    try:
        for user, vectors in written.items():
            assert index.ids(user) == set(vectors)
            got = index.get_vectors(user, list(vectors))
            np.testing.assert_allclose(np.vstack([got[i] for i in vectors]), np.vstack(list(vectors.values())), atol=1e-6)
    finally:
        index.close()
    assert migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, ["alice"]) is None  # once


def test_a_crashed_move_starts_again_and_a_finished_one_cleans_up(tmp_path: Path) -> None:
    written = old_home(tmp_path)
    leftover = EdgeVectorIndex(tmp_path / "vectors.partial", DIM)  # a move killed half-way
    leftover.upsert("alice", [str(uuid.uuid4())], rows(1, 9))
    leftover.close()
    assert migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, ["alice", "鲍勃"]) == 1503
    index = EdgeVectorIndex(tmp_path / "vectors", DIM)
    assert index.ids("alice") == set(written["alice"])  # not the leftover's point
    index.close()
    old_home(tmp_path)  # killed after the rename, before the old folder was removed
    assert migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, ["alice"]) is None
    assert not (tmp_path / "qdrant").exists()


def test_vectors_of_another_embedder_are_not_copied(tmp_path: Path) -> None:
    old_home(tmp_path, dim=DIM * 2)
    assert migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, ["alice", "鲍勃"]) == 0
    index = EdgeVectorIndex(tmp_path / "vectors", DIM)
    assert index.count("alice") == 0
    index.close()


def test_an_old_folder_held_by_an_old_tianma_is_refused(tmp_path: Path) -> None:
    old_home(tmp_path)
    holder = QdrantVectorIndex.from_options(dim=DIM, path=tmp_path / "qdrant")
    try:
        with pytest.raises(BackendUnavailableError, match="in use by another tianma process"):
            migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, ["alice"])
    finally:
        holder.close()
    assert is_local_mode(tmp_path / "qdrant") and not (tmp_path / "vectors").exists()


def test_nothing_to_move_is_nothing(tmp_path: Path) -> None:
    assert migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, []) is None
    assert not (tmp_path / "vectors").exists()


def test_a_target_folder_that_is_no_shard_is_replaced(tmp_path: Path) -> None:
    old_home(tmp_path)
    (tmp_path / "vectors" / "segments").mkdir(parents=True)  # a create cut short: no edge_config.json
    assert migrate_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIM, ["alice", "鲍勃"]) == 1503
    index = EdgeVectorIndex(tmp_path / "vectors", DIM)
    assert index.count("alice") == 1500
    index.close()
