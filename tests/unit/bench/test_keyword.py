"""``tianma bench keyword``: the Edge sparse keyword index behaves as a KeywordIndex, and the bench
measures both implementations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tianma.bench import keyword
from tianma.bench.common import BenchContext
from tianma.bench.keyword_sparse import IdfScope, SparseKeywordIndex, Weighting, token_index
from tianma.storage.protocols import KeywordIndex
from tianma.text.tokenize import tokenize

VARIANTS: list[tuple[Weighting, IdfScope]] = [
    ("tf", "all"),
    ("tf", "user"),
    ("bm25", "all"),
    ("bm25", "user"),
]


def rid(name: str) -> str:
    return keyword.record_id(name)


@pytest.fixture(params=VARIANTS, ids=lambda v: f"{v[0]}-{v[1]}")
def sparse(request: pytest.FixtureRequest, tmp_path: Path) -> SparseKeywordIndex:
    weighting, idf = request.param
    index = SparseKeywordIndex(tmp_path / "shard", weighting=weighting, idf=idf)
    request.addfinalizer(index.close)
    return index


def test_sparse_index_is_a_keyword_index(sparse: SparseKeywordIndex) -> None:
    assert isinstance(sparse, KeywordIndex)


def test_token_index_is_stable_and_32_bit() -> None:
    assert token_index("咖啡") == token_index("咖啡") != token_index("coffee")
    assert 0 <= token_index("coffee") < 2**32


def test_the_record_sharing_the_rare_token_comes_first(sparse: SparseKeywordIndex) -> None:
    common = [(rid(f"c{i}"), f"I had coffee with a friend at the cafe, day {i}") for i in range(20)]
    rare = (rid("rare"), "Coffee tastes different in Zanzibar")
    sparse.upsert("alice", [*common[:10], rare, *common[10:]])
    hits = sparse.search("alice", tokenize("coffee in Zanzibar"), 5)
    assert hits[0][0] == rare[0]
    assert hits[0][1] > hits[1][1] > 0
    assert len(hits) == 5
    assert sparse.search("alice", tokenize("volcano"), 5) == []
    assert sparse.search("alice", [], 5) == []


def test_search_is_filtered_by_user(sparse: SparseKeywordIndex) -> None:
    text = "my sister Priya lives in Lisbon"
    sparse.upsert("alice", [(rid("a"), text)])
    sparse.upsert("bob", [(rid("b"), text), (rid("b2"), "Bob's dog is called Lisbon")])
    query = tokenize("where does Priya live, Lisbon?")
    assert [r for r, _ in sparse.search("alice", query, 10)] == [rid("a")]
    assert {r for r, _ in sparse.search("alice", query, 10, others=True)} == {rid("b"), rid("b2")}
    assert sparse.ids("alice") == {rid("a")} and sparse.count("bob") == 2
    sparse.drop_user("bob")
    assert sparse.count("bob") == 0 and sparse.count("alice") == 1


def test_delete_and_clear_remove(sparse: SparseKeywordIndex) -> None:
    sparse.upsert("alice", [(rid("x"), "allergic to peanuts"), (rid("y"), "peanuts and shellfish")])
    sparse.delete([rid("x"), rid("unknown")])
    assert [r for r, _ in sparse.search("alice", tokenize("peanuts"), 10)] == [rid("y")]
    assert sparse.ids("alice") == {rid("y")}
    sparse.upsert("alice", [(rid("y"), "shellfish only")])  # replaces, no second entry
    assert sparse.count("alice") == 1 and sparse.search("alice", tokenize("peanuts"), 10) == []
    sparse.optimize()
    sparse.clear()
    assert sparse.count("alice") == 0


def test_replacing_moves_a_record_to_its_new_user(tmp_path: Path) -> None:
    index = SparseKeywordIndex(tmp_path / "shard")
    try:
        index.upsert("alice", [(rid("m"), "marathon in Berlin")])
        index.upsert("bob", [(rid("m"), "marathon in Berlin")])
        assert index.search("alice", tokenize("Berlin marathon"), 5) == []
        assert [r for r, _ in index.search("bob", tokenize("Berlin marathon"), 5)] == [rid("m")]
    finally:
        index.close()


def test_smoke_bench_measures_both_implementations(tmp_path: Path) -> None:
    payload = keyword.run(BenchContext(data=None, out=tmp_path, mode="smoke", show_progress=False))
    size = str(keyword.PLANS["smoke"].sizes[0])
    assert set(payload["speed"]) == set(keyword.VARIANTS) and "fts5" in payload["speed"]
    for name, cases in payload["speed"].items():
        case = cases[size]
        assert case["texts"] == int(size) and case["user_texts"] == int(size) // keyword.USERS, name
        assert 0 < case["search_ms"]["p50"] <= case["search_ms"]["p95"]
        assert case["search_ms"]["n"] == payload["corpus"]["queries"]
        assert case["hits_mean"] > 0 and case["upsert_texts_per_s"] > 0 and case["bytes_per_10k"] > 0
    assert payload["quality"] == {} and "LoCoMo" in payload["note"]
    assert payload["choice"].startswith("fts5")
    written = json.loads(Path(payload["file"]).read_text(encoding="utf-8"))
    assert written["benchmark"] == "keyword" and set(written["speed"]) == set(keyword.VARIANTS)
    assert not any((tmp_path / "cache").iterdir())  # the indexes were removed
    text = keyword.section(payload, tmp_path / "plots")
    for label in keyword.VARIANTS.values():
        assert f"| {label} |" in text


def _locomo(path: Path) -> None:
    def sample(sid: str, word: str) -> dict[str, object]:
        turns = [
            {"speaker": "Ann", "dia_id": "D1:1", "text": f"I adopted a puppy named {word} last week"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "That is lovely, how is the puppy doing?"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "The puppy sleeps all day"},
        ]
        qa = [
            {"question": f"What is the name of the puppy {word}?", "category": 4, "evidence": ["D1:1"]},
            {"question": "Unscored", "category": 5, "evidence": ["D1:2"]},
        ]
        conv = {"speaker_a": "Ann", "speaker_b": "Ben", "session_1": turns,
                "session_1_date_time": "1:56 pm on 8 May, 2023"}  # fmt: skip
        return {"sample_id": sid, "conversation": conv, "qa": qa}

    path.mkdir(parents=True)
    samples = [sample("conv-26", "Biscuit"), sample("conv-30", "Waffles")]
    (path / "locomo10.json").write_text(json.dumps(samples), encoding="utf-8")


def test_quality_is_measured_per_split_for_every_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _locomo(tmp_path / "data" / "locomo")
    monkeypatch.setitem(keyword.PLANS, "smoke", keyword.KeywordPlan((200,), 5, None))
    ctx = BenchContext(data=tmp_path / "data", out=tmp_path / "out", mode="smoke", show_progress=False)
    payload = keyword.run(ctx)
    assert set(payload["quality"]) == set(keyword.VARIANTS)
    for name, quality in payload["quality"].items():
        for split in ("dev", "test"):  # one scored question each, its rare name finds its turn
            assert quality[split] == {"n": 1, "R@5": 1.0, "R@10": 1.0}, name
    assert payload["best_sparse"] in keyword.VARIANTS and payload["best_sparse"] != "fts5"
    assert payload["choice"].startswith("fts5: recall within")
