"""``tianma jobs list | run | due`` against a real data home."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import select
from typer.testing import CliRunner

from tianma import Settings
from tianma.cli.app import app
from tianma.errors import InvalidInputError
from tianma.storage import job_runs
from tianma.storage import schema as t
from tianma.storage.records import NewEvent
from tianma.storage.schema import utcnow
from tianma.storage.sql_store import SqlMemoryStore, create_sql_engine

runner = CliRunner(env={"COLUMNS": "200", "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"})


def test_jobs_list_due_run_and_an_unknown_job(tmp_path: Path) -> None:
    home = str(tmp_path / "jobs-home")
    listed = runner.invoke(app, ["jobs", "list", "--home", home])
    assert listed.exit_code == 0, listed.output
    assert "decay" in listed.output and "reflection" in listed.output and "now (due)" in listed.output
    assert "behaviour_review" in listed.output and "aggregate" in listed.output and "6h" in listed.output
    assert "never" in listed.output and "UTC" in listed.output  # the zone the times are in
    assert "dialogue_end" in listed.output and "when a dialogue goes idle" in listed.output  # none is open

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
    assert "known jobs: dialogue_end, decay, aggregate, reflection, behaviour_review" in str(
        unknown.exception
    )


def test_jobs_due_from_cron_ends_an_idle_dialogue_once(tmp_path: Path) -> None:
    home = tmp_path / "cron-home"
    env = {"TIANMA_TIMEZONE": "Asia/Shanghai"}
    last = utcnow().replace(microsecond=0) - timedelta(hours=2)
    home.mkdir()
    store = SqlMemoryStore.from_url(Settings(home=home).sql_url)
    store.add_events([NewEvent("u", "user", "你好", last - timedelta(minutes=5), "d-old"),
                      NewEvent("u", "user", "再见", last, "d-old"),
                      NewEvent("u", "user", "还在聊", utcnow(), "d-new")])  # fmt: skip
    listed = runner.invoke(app, ["jobs", "list", "--home", str(home)], env=env)
    assert listed.exit_code == 0 and "Asia/Shanghai" in listed.output
    assert any("dialogue_end" in line and "now (due)" in line for line in listed.output.splitlines())

    due = runner.invoke(app, ["jobs", "due", "--home", str(home)], env=env)
    assert due.exit_code == 0, due.output
    assert "dialogue_end [" in due.output and "+08:00]" in due.output  # slots shown in local time
    with store.engine.connect() as conn:
        rows = {
            row.id: row.ended_at for row in conn.execute(select(t.dialogues.c.id, t.dialogues.c.ended_at))
        }
    assert rows["d-old"] == last + timedelta(minutes=30) and rows["d-new"] is None
    again = runner.invoke(app, ["jobs", "run", "dialogue_end", "--home", str(home)], env=env)
    assert again.exit_code == 0 and "nothing to do" in again.output
    assert [r["report"]["dialogue_ids"] for r in job_runs.runs(store.engine, "dialogue_end")] == [["d-old"]]
    store.close()
