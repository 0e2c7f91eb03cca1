"""``tianma experiment run`` on the learning benchmark (smoke size): a variant that changes
nothing differs by exactly nothing, question by question; one that turns memory off is a real loss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tianma.bench import learning
from tianma.bench.learning import SCENARIOS
from tianma.cli.app import app
from tianma.errors import InvalidInputError

runner = CliRunner(env={"COLUMNS": "200", "TIANMA_EMBEDDER__THREADS": "1"})


def test_an_experiment_pairs_each_question_and_tells_real_from_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(learning.SIZES, "smoke", (2, 40))  # enough questions for an interval
    done = runner.invoke(app, ["experiment", "run", "--smoke", "--quiet", "--out", str(tmp_path),
                               "--scenarios", str(SCENARIOS / "people-dev.json"),
                               "--variant", "same=retrieval.candidates=30",  # the default: no change
                               "--variant", "amnesia=retrieval.max_injected=0,retrieval.max_resident=0"])  # fmt: skip
    assert done.exit_code == 0, done.output
    (written,) = tmp_path.glob("experiment-*.json")
    payload = json.loads(written.read_text(encoding="utf-8"))
    same, amnesia = payload["comparisons"]["same"]["dev"], payload["comparisons"]["amnesia"]["dev"]
    assert same["hit"]["units"] >= 8 and amnesia["hit"]["units"] >= 8  # questions judged under both arms
    langs = {s for s in payload["comparisons"]["same"] if s.startswith("dev · ")}
    assert langs and langs <= {"dev · zh", "dev · en"}  # the users' languages are categories
    for metric in ("hit", "stale"):  # the same seed, data and embedder: identical answers
        assert (same[metric]["difference"], same[metric]["low"], same[metric]["high"]) == (0.0, 0.0, 0.0)
        assert not same[metric]["real"]
    assert amnesia["hit"]["difference"] < 0 and amnesia["hit"]["real"]  # no memory: fewer wishes carried
    latency = payload["comparisons"]["same"]["ratios"]["latency"]  # each judged question's turn, paired
    assert latency["units"] == same["hit"]["units"] and latency["low"] <= latency["ratio"] <= latency["high"]
    assert payload["variants"]["amnesia"]["items"] == ["retrieval.max_injected=0", "retrieval.max_resident=0"]
    report = Path(payload["report"]).read_text(encoding="utf-8")
    assert "| amnesia |" in report and "| same |" in report and "whole-run time" in report
    assert Path(payload["plot"]).stat().st_size > 1000 and Path(payload["plot"]).name in report


def test_an_experiment_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    for args, needle in ((["--bench", "perf,bogus", "--variant", "x=rerank:rerank_mmr"], "choose from"),
                         (["--bench", ",", "--variant", "x=rerank:rerank_mmr"], "choose from"),
                         (["--variant", "x=ranker:mmr"], "no slot"), ([], "at least one --variant")):  # fmt: skip
        done = runner.invoke(app, ["experiment", "run", "--smoke", "--quiet", "--out", str(tmp_path), *args])
        assert isinstance(done.exception, InvalidInputError) and needle in str(done.exception), done.output
    assert not list(tmp_path.glob("experiment-*")), "nothing runs before every benchmark named is known"


def test_an_experiment_on_prefeval_pairs_each_item_at_each_distractor_count(tmp_path: Path) -> None:
    from tests.fixtures.eval_data import write_prefeval
    from tianma.bench.common import BenchContext
    from tianma.experiments import offline
    from tianma.experiments.variants import parse_variant

    write_prefeval(tmp_path / "data")
    ctx = BenchContext(data=tmp_path / "data", out=tmp_path / "out", mode="smoke", show_progress=False)
    payload = offline.run(ctx, "prefeval", [parse_variant("same=retrieval.candidates=30"),
                                            parse_variant("amnesia=retrieval.max_injected=0,retrieval.max_resident=0")])  # fmt: skip
    same = payload["comparisons"]["same"]["test"]["carried"]
    forms = [payload["comparisons"]["same"][f"test · {form}"]["carried"]["units"] for form in ("explicit", "choice-based", "persona-driven")]
    assert forms == [2, 2, 2]  # each form a category of its own
    assert same["units"] == 6 and (same["difference"], same["low"], same["high"]) == (0.0, 0.0, 0.0)  # 3 forms × N 0, 3
    amnesia = payload["comparisons"]["amnesia"]
    assert amnesia["test"]["carried"]["variant"] == 0.0 and amnesia["test"]["carried"]["difference"] < 0
    assert amnesia["ratios"]["prompt_tokens"] < 1.0  # no memory block in the prompt
    latency = amnesia["ratios"]["latency"]  # the question turn of each item, paired
    assert latency["units"] == 6 and latency["low"] <= latency["ratio"] <= latency["high"]
    assert "| amnesia |" in Path(payload["report"]).read_text(encoding="utf-8")


def test_an_experiment_on_locomo_pairs_each_question_through_search(tmp_path: Path) -> None:
    from tests.fixtures.eval_data import write_locomo
    from tianma.bench.common import BenchContext
    from tianma.experiments import offline
    from tianma.experiments.variants import parse_variant

    write_locomo(tmp_path / "data")
    ctx = BenchContext(data=tmp_path / "data", out=tmp_path / "out", mode="quick", show_progress=False)
    payload = offline.run(ctx, "locomo", [parse_variant("same=retrieval.graph=false"),
                                          parse_variant("keyword=retrieval.channels=keyword")])  # fmt: skip
    same = payload["comparisons"]["same"]["all"]["R@5"]
    assert same["units"] > 0 and (same["difference"], same["low"], same["high"]) == (0.0, 0.0, 0.0)
    scopes = set(payload["comparisons"]["keyword"])
    assert {"dev", "test", "all", "ratios"} <= scopes and any(s.startswith("test · ") for s in scopes)  # categories
    by_category = [payload["comparisons"]["same"][s]["R@5"]["units"] for s in scopes if s.startswith("test · ")]
    assert sum(by_category) == payload["comparisons"]["same"]["test"]["R@5"]["units"]  # each question in one
    latency = payload["comparisons"]["keyword"]["ratios"]["latency"]
    assert latency["units"] == same["units"] and latency["low"] <= latency["ratio"] <= latency["high"]
    assert payload["levels"]["keyword"]["dev"]["R@5"] <= 1.0
    assert "| keyword | `retrieval.channels=keyword` |" in Path(payload["report"]).read_text(encoding="utf-8")


def test_an_experiment_on_perf_pairs_each_turn_and_times_it(tmp_path: Path) -> None:
    from tianma.bench.common import BenchContext
    from tianma.experiments import offline
    from tianma.experiments.variants import parse_variant

    ctx = BenchContext(data=None, out=tmp_path, mode="smoke", show_progress=False)
    (payload,) = offline.run_many(ctx, "perf,perf", [parse_variant("same=retrieval.candidates=30"),
                                                     parse_variant("amnesia=retrieval.max_injected=0,retrieval.max_resident=0")])  # fmt: skip
    same, amnesia = payload["comparisons"]["same"], payload["comparisons"]["amnesia"]
    assert same["turns"]["injected"]["units"] == 12  # 2 runs × 6 measured turns, the same turns in every arm
    for metric in ("memory_tokens", "injected"):  # the same store, messages and times: the same prompts
        assert (same["turns"][metric]["difference"], same["turns"][metric]["low"]) == (0.0, 0.0)
    assert payload["levels"]["baseline"]["injected"] > 0
    assert amnesia["turns"]["injected"]["variant"] == 0.0 and amnesia["turns"]["memory_tokens"]["real"]
    assert amnesia["turns"]["memory_tokens"]["difference"] < 0 and amnesia["ratios"]["prompt_tokens"] < 1.0
    latency = same["ratios"]["latency"]
    assert latency["units"] == 12 and latency["low"] <= latency["ratio"] <= latency["high"]
    assert latency["baseline_ms"] > 0 and latency["variant_ms"] > 0
    report = Path(payload["report"]).read_text(encoding="utf-8")
    assert "| amnesia | `retrieval.max_injected=0, retrieval.max_resident=0` | turns | memory_tokens |" in report
    assert "→" in report and Path(payload["plot"]).stat().st_size > 1000
