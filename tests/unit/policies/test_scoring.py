from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tianma.policies.scoring import RerankPolicy, recency, rerank, score_candidate
from tianma.storage.records import Candidate, MemoryRecord, Provenance

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def candidate(
    rid: str,
    relevance: float,
    *,
    days_old: float = 0,
    confidence: float = 0.5,
    hits: int = 0,
    importance: float = 0.5,
) -> Candidate:
    when = NOW - timedelta(days=days_old)
    record = MemoryRecord(
        id=rid,
        user_id="u",
        kind="fact",
        content=rid,
        created_at=when,
        updated_at=when,
        provenance=Provenance(event_ids=("e",)),
        confidence=confidence,
        importance=importance,
        hit_count=hits,
    )
    return Candidate(record=record, relevance=relevance, channels=("dense",))


def test_recency_halves_every_half_life() -> None:
    assert recency(NOW, NOW, 30) == pytest.approx(1.0)
    assert recency(NOW - timedelta(days=30), NOW, 30) == pytest.approx(0.5)
    assert recency(NOW - timedelta(days=60), NOW, 30) == pytest.approx(0.25)


def test_never_more_than_five_whatever_the_policy_says() -> None:
    many = [candidate(f"m{i}", 0.9) for i in range(20)]
    assert len(rerank(many, NOW, RerankPolicy())) == 5
    assert len(rerank(many, NOW, RerankPolicy(max_kept=9))) == 5
    assert len(rerank(many, NOW, RerankPolicy(max_kept=3))) == 3


def test_irrelevant_candidates_are_dropped() -> None:
    kept = rerank([candidate("a", 0.9), candidate("b", 0.05)], NOW, RerankPolicy(min_relevance=0.15))
    assert [m.id for m in kept] == ["a"]


def test_each_factor_moves_the_score_the_right_way() -> None:
    policy = RerankPolicy()
    base = score_candidate(candidate("x", 0.6), NOW, policy)
    assert score_candidate(candidate("x", 0.6, days_old=60), NOW, policy) < base
    assert score_candidate(candidate("x", 0.6, confidence=0.9), NOW, policy) > base
    assert score_candidate(candidate("x", 0.6, hits=5), NOW, policy) > base
    assert score_candidate(candidate("x", 0.6, importance=0.9), NOW, policy) > base
    assert score_candidate(candidate("x", 0.8), NOW, policy) > base


def test_an_old_exact_memory_still_beats_a_fresh_vague_one() -> None:
    kept = rerank([candidate("vague", 0.3), candidate("exact", 0.9, days_old=120)], NOW, RerankPolicy())
    assert kept[0].id == "exact"


def event_candidate(rid: str, content: str, relevance: float) -> Candidate:
    record = MemoryRecord(id=rid, user_id="u", kind="event", content=content, created_at=NOW, updated_at=NOW,
                          provenance=Provenance(), confidence=1.0, at=NOW)  # fmt: skip
    return Candidate(record=record, relevance=relevance, channels=("dense",))


def test_a_past_question_ranks_below_a_statement_and_repeats_inject_once() -> None:
    kept = rerank(
        [
            event_candidate("q1", "这周六有什么安排？", 0.8),
            event_candidate("q2", "这周六有什么安排？", 0.79),
            event_candidate("s", "以后周末别给我安排提醒", 0.6),
        ],
        NOW,
        RerankPolicy(),
    )
    assert [m.id for m in kept] == ["s", "q1"]
