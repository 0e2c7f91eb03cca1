"""``tianma jobs list | run | due`` against a real data home."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tianma import Settings
from tianma.cli.app import app
from tianma.errors import InvalidInputError
from tianma.memory import job_runs
from tianma.memory.sql_store import create_sql_engine

runner = CliRunner(env={"COLUMNS": "200", "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"})


def test_jobs_list_due_run_and_an_unknown_job(tmp_path: Path) -> None:
    home = str(tmp_path / "jobs-home")
    listed = runner.invoke(app, ["jobs", "list", "--home", home])
    assert listed.exit_code == 0, listed.output
    assert "decay" in listed.output and "reflection" in listed.output and "now (due)" in listed.output
    assert "behaviour_review" in listed.output and "aggregate" in listed.output and "6h" in listed.output
    assert "never" in listed.output

    due = runner.invoke(app, ["jobs", "due", "--home", home])
    assert due.exit_code == 0, due.output
    assert "decay [" in due.output and "reflection [" in due.output and due.output.count(" ok") == 4
    assert "aggregate [" in due.output
    assert "behaviour_review [" in due.output
    assert "nothing due" in runner.invoke(app, ["jobs", "due", "--home", home]).output

    again = runner.invoke(app, ["jobs", "run", "decay", "--home", home])
    assert again.exit_code == 0 and "skipped: already run" in again.output
    forced = runner.invoke(app, ["jobs", "run", "decay", "--force", "--home", home])
    assert forced.exit_code == 0 and "decay [" in forced.output and " ok" in forced.output

    after = runner.invoke(app, ["jobs", "list", "--home", home])
    assert after.exit_code == 0 and "now (due)" not in after.output and after.output.count("ok") == 4
    engine = create_sql_engine(Settings(home=Path(home)).sql_url)
    assert [r["job"] for r in job_runs.runs(engine)] == [
        "decay", "aggregate", "reflection", "behaviour_review", "decay",
    ]  # fmt: skip
    engine.dispose()

    unknown = runner.invoke(app, ["jobs", "run", "feedback", "--home", home])
    assert unknown.exit_code != 0 and isinstance(unknown.exception, InvalidInputError)
    assert "known jobs: decay, aggregate, reflection, behaviour_review" in str(unknown.exception)
