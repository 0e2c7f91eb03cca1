"""Maximal marginal relevance picks differing memories (``retrieval.diversity``, ``rerank_mmr``)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from tianma.policies.diversity import mmr
from tianma.storage.records import ScoredMemory

T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


def _m(rid: str, score: float) -> ScoredMemory:
    return ScoredMemory(id=rid, kind="event", content=rid, score=score, source_event_ids=(rid,), relevance=score, at=T0)


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_mmr_takes_the_different_memory_before_the_near_copy_of_the_best() -> None:
    scored = [_m("cat", 1.0), _m("cat-again", 0.95), _m("dog", 0.7), _m("bird", 0.2)]
    vectors = {"cat": _unit(1, 0, 0), "cat-again": _unit(0.99, 0.1, 0), "dog": _unit(0, 1, 0), "bird": _unit(0, 0, 1)}
    assert [m.id for m in mmr(scored, vectors, 2, 0.3)] == ["cat", "dog"]
    assert [m.id for m in mmr(scored, vectors, 2, 0.0)] == ["cat", "cat-again"]  # scores alone: the builtin order
    assert [m.id for m in mmr(scored, {}, 3, 0.3)] == ["cat", "cat-again", "dog"]  # no vectors: by score
    assert mmr([], vectors, 5, 0.3) == []
