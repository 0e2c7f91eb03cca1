"""The embedding cache and the raw-turn baselines."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from tests.fakes import CharacterEmbedder
from tianma.bench.systems import (
    BM25System,
    CachingEmbedder,
    DenseSystem,
    Doc,
    TianmaSystem,
    bm25_tokens,
    scratch_dir,
)
from tianma.storage.protocols import Matrix, Vector

AT = datetime(2024, 1, 1, tzinfo=UTC)
DOCS = [
    Doc("d1", "I adopted a grey cat named Pixel.", "user", AT, "s1", "Ann"),
    Doc("d2", "My brother plays the cello.", "assistant", AT, "s1", "Bo"),
    Doc("d3", "我周末去杭州看西湖。", "user", AT, "s2", None),
]


class CountingEmbedder(CharacterEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return super().embed_query(text)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self.passages.extend(texts)
        return super().embed_passages(texts)


def test_cache_embeds_each_text_once_and_persists(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cache = CachingEmbedder(inner, tmp_path / "c.npz")
    first = cache.embed_passages(["a", "b", "a"])
    again = cache.embed_passages(["b", "a"])
    assert inner.passages == ["a", "b"]
    assert np.allclose(first[0], again[1])
    cache.embed_query("a")
    cache.embed_query("a")
    cache.embed_query("b")
    assert inner.queries == ["a", "b"]  # queries are cached apart from passages (e5 prefixes differ)
    cache.save()
    reloaded_inner = CountingEmbedder()
    reloaded = CachingEmbedder(reloaded_inner, tmp_path / "c.npz")
    assert np.allclose(reloaded.embed_passages(["a"])[0], first[0])
    assert reloaded_inner.passages == []


def test_prefill_spreads_missing_texts_over_engines() -> None:
    engines = [CountingEmbedder(), CountingEmbedder()]
    cache = CachingEmbedder(engines[0])
    cache.embed_passages(["x"])
    assert cache.prefill(["x", *(f"t{i}" for i in range(10))], engines, chunk=3) == 10
    assert len(engines[0].passages) > 1 and len(engines[1].passages) > 0
    before = len(engines[0].passages) + len(engines[1].passages)
    cache.embed_passages([f"t{i}" for i in range(10)])
    assert len(engines[0].passages) + len(engines[1].passages) == before


def test_bm25_tokens_drop_stopwords_and_split_cjk() -> None:
    assert bm25_tokens("What is THE name of Ann's cat?") == ["name", "ann", "s", "cat"]
    assert bm25_tokens("去杭州") == ["去", "杭", "州"]


def test_bm25_and_dense_find_the_matching_turn_per_user() -> None:
    for system in (BM25System(), DenseSystem(CharacterEmbedder())):
        system.add("u1", DOCS)
        system.add("u2", [Doc("x", "Pixel is a camera brand.", "user", AT, "s1")])
        hits = system.search("u1", "Ann adopted a grey cat named Pixel", 2)
        assert next(iter(hits[0].doc_ids)) == "d1", system.name
        assert hits[0].text == "Ann: I adopted a grey cat named Pixel."
        assert all(h.doc_ids <= {"d1", "d2", "d3"} for h in hits)
        system.close()


def test_bm25_without_query_words_returns_nothing() -> None:
    system = BM25System()
    system.add("u", DOCS)
    assert system.search("u", "what is the", 5) == []


def test_tianma_system_home_is_temporary_and_removed_on_close() -> None:
    system = TianmaSystem(CharacterEmbedder(), clock=lambda _user: AT)
    home = system.settings.home
    assert home.is_dir() and (scratch_dir() is None or str(home).startswith(scratch_dir() or ""))
    system.add("u", DOCS[:2])
    assert [h.doc_ids for h in system.search("u", "grey cat Pixel", 1)] == [frozenset({"d1"})]
    system.close()
    assert not home.exists()
