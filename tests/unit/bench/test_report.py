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
