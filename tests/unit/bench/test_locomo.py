"""LoCoMo loading and scoring on a miniature file in LoCoMo's schema; the real data when present."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.fixtures.eval_data import write_locomo
from tianma.bench.common import BenchContext
from tianma.bench.locomo import run_locomo, summarise
from tianma.bench.locomo_data import load_locomo, normalise_evidence, parse_session_date
from tianma.bench.recall import score_question
from tianma.bench.systems import BM25System, Hit
from tianma.errors import InvalidInputError

REAL = Path(__file__).resolve().parents[4] / "shared" / "eval-data" / "locomo" / "locomo10.json"


def test_session_dates_parse_to_utc() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    with pytest.raises(InvalidInputError, match="unreadable session date"):
        parse_session_date("yesterday")


def test_evidence_is_normalised_as_the_protocol_says() -> None:
    known = {"D1:3", "D30:5", "D2:1", "D2:2"}
    assert normalise_evidence(["D1:3; D2:1", "D:2:2", "D30:05", "D", "D10:19"], known) == {
        "D1:3", "D2:1", "D2:2", "D30:5",
    }  # fmt: skip


def test_loader_builds_turns_questions_and_skips(tmp_path: Path) -> None:
    convs = load_locomo(write_locomo(tmp_path))
    dev = convs[0]
    assert dev.sample_id == "conv-26"
    assert [d.id for d in dev.docs][:2] == ["D1:1", "D1:2"]
    assert dev.docs[0].role == "user" and dev.docs[1].role == "assistant"  # speaker A = user side
    assert dev.docs[6].text.endswith("[shares a cat next to a medal]")
    assert dev.skipped_questions == 1  # the one without evidence
    cello = next(q for q in dev.questions if q.text.startswith("Who teaches"))
    assert cello.evidence == {"D1:4", "D2:2"}
    assert dev.frozen_at == datetime(2023, 6, 21, 10, 3, 30, tzinfo=UTC)
    assert convs[1].questions[1].evidence == {"D1:2"}  # D9:9 matches no turn


def test_loader_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not found"):
        load_locomo(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"sample_id": "x"}]))
    with pytest.raises(InvalidInputError, match="schema"):
        load_locomo(bad)
    with pytest.raises(InvalidInputError, match="no conversation conv-99"):
        load_locomo(write_locomo(tmp_path), only={"conv-99"})


def test_recall_metrics() -> None:
    hits = [
        Hit(frozenset({"D1:1"}), "a b"),
        Hit(frozenset({"D2:5", "D2:6"}), "c"),
        Hit(frozenset({"D3:1"}), "d"),
    ]
    m = score_question(frozenset({"D2:6", "D4:1"}), hits, lambda d: d.split(":")[0], len, ks=(2, 10))
    assert m["R@2"] == 0.5 and m["any@2"] == 1.0 and m["all@2"] == 0.0
    assert m["sessR@2"] == 0.5  # D2 found, D4 not
    assert m["turns"] == 3.0 and m["tokens"] == 4.0  # the top 2 cover three turns; len("a b") + len("c")


def test_bm25_run_scores_each_split(tmp_path: Path) -> None:
    convs = load_locomo(write_locomo(tmp_path))
    result = run_locomo([lambda _c: BM25System()], convs)
    summary = result["systems"]["BM25 (raw turns)"]["summary"]
    assert summary["dev"]["overall"]["n"] == 5 and summary["test"]["overall"]["n"] == 2
    assert summary["dev"]["by_category"]["single-hop"]["R@5"] == 1.0  # "Pixel" and "Leeds" are found
    rows = result["systems"]["BM25 (raw turns)"]["rows"]
    assert summarise(rows)["all"]["overall"]["n"] == 7


def test_locomo_benchmark_end_to_end(tmp_path: Path) -> None:
    """tianma, BM25, dense and the peers on the miniature data: payload, JSON, report section."""
    from tianma.bench import locomo_cli

    write_locomo(tmp_path / "data")
    ctx = BenchContext(data=tmp_path / "data", out=tmp_path / "out", mode="quick", show_progress=False)
    payload = locomo_cli.run(ctx)
    names = list(payload["systems"])
    assert (
        names[0] == "tianma" and "BM25 (raw turns)" in names and "dense (raw turns, same embedder)" in names
    )
    tianma = payload["systems"]["tianma"]["summary"]["dev"]["overall"]
    assert 0.0 <= tianma["R@5"] <= tianma["R@10"] <= 1.0
    assert tianma["R@5"] >= 0.6  # three of five questions name a rare word of their evidence turn
    assert Path(payload["file"]).is_file()
    assert payload["config"]["query"] == "the question text alone"
    md = locomo_cli.section(payload, ctx.plots)
    assert "| tianma |" in md and "R@5 ÷ tianma" in md and (ctx.plots / "locomo.png").stat().st_size > 0
    assert (ctx.cache / "locomo-e5.npz").is_file()  # the next run embeds nothing


@pytest.mark.skipif(not REAL.is_file(), reason="LoCoMo data not beside the checkout (../shared/eval-data)")
def test_real_locomo_counts_match_the_protocol() -> None:
    convs = load_locomo(REAL)
    assert len(convs) == 10 and sum(len(c.docs) for c in convs) == 5882
    questions = [q for c in convs for q in c.questions]
    assert len(questions) == 1982 and sum(q.category != 5 for q in questions) == 1536
