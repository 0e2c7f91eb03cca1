"""The README results block is rewritten from a report; nothing else in the README changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tianma.bench.report import BEGIN, END, README_PLOTS, update_readme
from tianma.errors import InvalidInputError


def test_readme_block_is_replaced_and_plots_copied(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# tianma\n\nintro\n\n{BEGIN}\nold numbers\n{END}\n\n## After\nkept\n", encoding="utf-8"
    )
    results = tmp_path / "results"
    (results / "plots").mkdir(parents=True)
    (results / "plots" / "locomo.png").write_bytes(b"\x89PNG fake")
    report = results / "report.md"
    report.write_text(
        "# tianma benchmark report\n\nRun …\n\n## LoCoMo\n\n![x](plots/locomo.png)\n", encoding="utf-8"
    )
    update_readme(readme, report)
    text = readme.read_text(encoding="utf-8")
    assert "old numbers" not in text and "intro" in text and "## After\nkept" in text
    assert "### LoCoMo" in text  # one level down inside the README's own section
    assert f"]({README_PLOTS.as_posix()}/locomo.png)" in text
    assert (tmp_path / README_PLOTS / "locomo.png").read_bytes() == b"\x89PNG fake"
    update_readme(readme, report)  # idempotent
    assert readme.read_text(encoding="utf-8") == text


def test_readme_without_markers_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n", encoding="utf-8")
    report = tmp_path / "report.md"
    report.write_text("# r\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="markers"):
        update_readme(readme, report)


def test_report_is_rerendered_from_the_last_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from tianma.bench.common import BenchContext
    from tianma.bench.report import rerender

    ctx = BenchContext(data=None, out=tmp_path)
    with pytest.raises(InvalidInputError, match="no earlier run"):
        rerender(ctx)
    learning = {
        "benchmark": "learning",
        "machine": {"cpu_count": 2, "cpu_model": "TestCPU", "platform": "Linux", "python": "3.11"},
        "versions": {"git_commit": "abc123def4567890"},
    }
    (tmp_path / "learning.json").write_text(json.dumps(learning), encoding="utf-8")
    index = {
        "date": "2026-11-29T18:00:00+00:00",
        "mode": "full",
        "seconds": {"learning": 90.0},
        "failures": {"perf": "RuntimeError: boom"},
        "results": {"learning": str(tmp_path / "learning.json")},
    }
    (tmp_path / "report.json").write_text(json.dumps(index), encoding="utf-8")
    import tianma.bench.learning as learning_module

    monkeypatch.setattr(learning_module, "section", lambda payload, plots: "## Learning (re-rendered)")
    text = rerender(ctx).read_text(encoding="utf-8")
    again = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert again["results"] == index["results"]  # a second re-render still finds the files
    assert "mode **full**" in text and "2026-11-29 18:00 UTC" in text
    assert "TestCPU" in text and "`abc123def456`" in text  # the run's machine and commit, not today's
    assert "**perf failed:** `RuntimeError: boom`" in text and "## Learning (re-rendered)" in text
