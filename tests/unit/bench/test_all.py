"""``tianma bench all --smoke`` (what CI runs): every benchmark, one report with plots, README block."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.fixtures.eval_data import write_locomo, write_prefeval
from tianma.bench.report import BEGIN, END
from tianma.cli import app

runner = CliRunner(env={"COLUMNS": "200"})


def test_bench_all_smoke_writes_every_result_a_report_and_the_readme(tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    write_locomo(data)
    write_prefeval(data)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{BEGIN}\nold\n{END}\n", encoding="utf-8")
    result = runner.invoke(
        app,
        [
            "bench",
            "all",
            "--smoke",
            "--quiet",
            "--data",
            str(data),
            "--out",
            str(out),
            "--readme",
            str(readme),
        ],
    )
    assert result.exit_code == 0, result.output
    index = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert index["failures"] == {} and index["mode"] == "smoke"
    assert set(index["results"]) == {"locomo", "prefeval", "perf", "learning", "serve", "vectors"}
    for name, path in index["results"].items():
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        assert payload["benchmark"] == name and payload["machine"]["cpu_count"] >= 1
    report = (out / "report.md").read_text(encoding="utf-8")
    for heading in ("LoCoMo", "PrefEval", "tianma serve"):
        assert heading in report
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert {"locomo.png", "prefeval.png", "learning_curve.png"} <= set(pngs)
    linked = [line for line in report.splitlines() if line.startswith("![")]
    assert len(linked) >= 4 and all((out / line.split("](", 1)[1].rstrip(")")).is_file() for line in linked)
    text = readme.read_text(encoding="utf-8")
    assert "\nold\n" not in text and "| tianma |" in text
    assert (tmp_path / "docs" / "bench" / "locomo.png").is_file()


def test_bench_refuses_smoke_with_full_and_missing_data(tmp_path: Path) -> None:
    both = runner.invoke(app, ["bench", "locomo", "--smoke", "--full", "--out", str(tmp_path)])
    assert both.exit_code != 0 and "exclude" in str(both.exception)
    missing = runner.invoke(
        app, ["bench", "locomo", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path)]
    )
    assert missing.exit_code != 0 and "does not exist" in str(missing.exception)
