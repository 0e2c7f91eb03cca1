"""PrefEval loading and scoring on a miniature dataset in PrefEval's schema (never the real data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.eval_data import PREFERENCES, write_prefeval
from tianma.bench import prefeval
from tianma.bench.common import BenchContext
from tianma.bench.prefeval_data import (
    FORMS,
    START,
    build_docs,
    frozen_at,
    load_distractors,
    load_items,
    topics,
)
from tianma.bench.systems import BM25System, Hit
from tianma.errors import InvalidInputError


def test_loaders_build_docs_and_gold(tmp_path: Path) -> None:
    root = write_prefeval(tmp_path)
    assert topics(root) == ["alpha_food", "beta_travel"]
    pairs = load_distractors(root)
    assert [(p.user, p.conversation) for p in pairs] == [
        ("Convert this loop to Go.", 0), ("Write a poem about autumn.", 1), ("What rhymes with tree?", 1),
    ]  # fmt: skip
    items = load_items(root, per_topic=2)
    assert len(items) == 12
    # interleaved: index, then topic, then form, so a prefix covers every form
    assert [i.key for i in items[:4]] == [
        "explicit/alpha_food/0", "choice-based/alpha_food/0", "persona-driven/alpha_food/0",
        "explicit/beta_travel/0",
    ]  # fmt: skip
    explicit, choice, persona = items[:3]
    assert [m.text for m in explicit.turns] == [PREFERENCES["alpha_food"][0][0], "Noted."]
    assert explicit.gold == {"explicit/alpha_food/0:0"}
    assert [m.role for m in choice.turns] == ["user", "assistant", "user", "assistant"]
    assert choice.gold == {"choice-based/alpha_food/0:0", "choice-based/alpha_food/0:2"}
    assert persona.turns[0].text == "Hello there!"  # turns in numeric key order
    assert persona.gold == {"persona-driven/alpha_food/0:0", "persona-driven/alpha_food/0:2"}

    docs = build_docs(choice, pairs, 2)
    assert [d.id for d in docs][-1] == "choice-based/alpha_food/0:7" and len(docs) == 8
    assert [d.dialogue for d in docs] == ["pref"] * 4 + ["d0", "d0", "d1", "d1"]
    assert docs[0].at == START and (docs[1].at - docs[0].at).total_seconds() == 60
    assert all(d.speaker is None for d in docs) and docs[4].role == "user"
    assert frozen_at(docs) == docs[-1].at.replace(day=2)
    assert len(build_docs(explicit, pairs, 100)) == 2 + 2 * len(pairs)  # N beyond the data: all of it


def test_malformed_data_is_a_clear_error(tmp_path: Path) -> None:
    ctx = BenchContext(data=tmp_path, out=tmp_path / "out", mode="smoke", show_progress=False)
    with pytest.raises(InvalidInputError, match="does not exist"):
        prefeval.run(ctx)
    root = write_prefeval(tmp_path)
    bad = root / "implicit_preference/choice-based/alpha_food.json"
    bad.write_text(json.dumps([{"preference": "p", "question": "q", "conversation": {"query": "x"}}]))
    with pytest.raises(InvalidInputError, match="choice-based schema"):
        load_items(root, 1)
    (root / "filtered_inter_turns.json").write_text("[{]")
    with pytest.raises(InvalidInputError, match="not JSON"):
        load_distractors(root)


def test_bm25_finds_a_plainly_stated_preference(tmp_path: Path) -> None:
    root = write_prefeval(tmp_path)
    pairs = load_distractors(root)
    explicit = load_items(root, 1)[0]
    bm25 = BM25System()
    for n in (0, len(pairs)):
        user = f"{explicit.key}@{n}"
        bm25.add(user, build_docs(explicit, pairs, n))
        hits = bm25.search(user, explicit.question, 10)  # "snacks" is in the preference only
        assert prefeval.score(explicit.gold, hits, len)["hit@5"] == 1.0
    missed = prefeval.score(frozenset({"x:0"}), [Hit(frozenset({"x:1"}), "abc")] * 6, len)
    assert missed == {"hit@5": 0.0, "hit@10": 0.0, "rank": None, "tokens@5": 15, "returned": 6}


def test_smoke_run_payload_json_and_section(tmp_path: Path) -> None:
    write_prefeval(tmp_path / "data")
    ctx = BenchContext(data=tmp_path / "data", out=tmp_path / "out", mode="smoke", show_progress=False)
    payload = prefeval.run(ctx)
    names = list(payload["systems"])
    assert names[:3] == ["tianma", "BM25 (raw turns)", "dense (raw turns, same embedder)"]
    assert payload["distractor_counts"] == [0, 3]  # N = 5 asked, the miniature file has 3 pairs
    assert payload["items"] == dict.fromkeys(FORMS, 1)
    for name, res in payload["systems"].items():
        for n in ("0", "3"):
            for form in FORMS:
                cell = res["results"][n][form]
                assert cell["n"] == 1, (name, n, form)
                assert 0.0 <= cell["hit@5"] <= cell["hit@10"] <= 1.0
    assert payload["systems"]["tianma"]["results"]["0"]["explicit"]["hit@5 ÷ tianma"] in (1.0, None)
    assert payload["target"] == {"hit@5 at N=300, each form": 0.97}
    assert json.loads(Path(payload["file"]).read_text())["sample"] == payload["sample"]
    md = prefeval.section(payload, ctx.plots)
    assert md.startswith("## PrefEval") and "plots/prefeval.png" in md and "Target hit@5" in md
    assert all(f"| {name}" in md for name in names)
    assert (ctx.plots / "prefeval.png").stat().st_size > 0
    assert (ctx.cache / "prefeval-e5.npz").is_file()
    turns = payload["turn_path"]
    assert turns["counts"] == [0, 3] and turns["items"] == dict.fromkeys(FORMS, 1)
    stated = turns["results"]["3"]["explicit"]  # "I am allergic to peanuts, so never suggest …"
    assert stated["carried"] == 1.0 and stated["via_resident"] == 1.0  # a statement: in every prompt
    assert stated["relevant_share"] is not None and 0 < stated["relevant_share"] <= 1
    assert stated["tokens"] > 0 and stated["current_statements"] >= 1
    assert all(r["user_turns"] >= 3 for r in turns["rows"] if r["N"] == 3)  # the distractors were turns
    assert "Turn path: target" in md and "| 3 | explicit | 1 |" in md


def test_the_turn_path_verdict_says_why_the_misses_were_missed() -> None:
    from tianma.bench import prefeval_turns

    def row(carried: bool, stated: bool, current: bool) -> dict[str, object]:
        return {"N": 300, "form": "explicit", "carried": carried, "gold_stated": stated, "gold_current": current,
                "current_statements": 20}  # fmt: skip

    rows = [row(True, True, True)] * 7 + [row(False, False, False), row(False, True, False), row(False, True, True)]
    arm = {"counts": [0, 300], "rows": rows, "results": {"300": {"explicit": {"carried": 0.7}}}}
    said = prefeval_turns.verdict(arm)
    assert "missed (explicit 0.700)" in said and "Of the 3 questions missed" in said
    assert "never taken as a statement in 1" in said and "closed by a later message in 1" in said
    assert "left out of the prompt in 1" in said
    arm["results"]["300"]["explicit"]["carried"] = 0.96
    assert prefeval_turns.verdict(arm).endswith("met (explicit 0.960).")
