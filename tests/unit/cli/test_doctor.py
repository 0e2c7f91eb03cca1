"""Issue #14: ``tianma doctor``'s exit status tells a script what is wrong — 0 all is well, 1 the
home, store or index, 3 only Ollama or the chat model — against the Ollama stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tianma.cli.app import app
from tianma.cli.doctor import Check, exit_status
from tianma.testing.ollama_standin import OllamaStandin

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[OllamaStandin]:
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    with OllamaStandin() as running:
        yield running


def _doctor(home: Path, base_url: str, model: str) -> tuple[int, str]:
    env = {
        "TIANMA_OLLAMA__BASE_URL": base_url,
        "TIANMA_OLLAMA__MODEL": model,
        "TIANMA_EMBEDDER__THREADS": "1",
    }
    done = runner.invoke(app, ["doctor", "--home", str(home)], env=env)
    return done.exit_code, done.output


def test_doctor_exits_0_only_when_ollama_and_the_model_are_there(
    tmp_path: Path, standin: OllamaStandin
) -> None:
    home = tmp_path / "home"
    code, out = _doctor(home, standin.base_url, standin.models[0])
    assert code == 0, out
    code, out = _doctor(home, standin.base_url, "not-pulled:1b")
    assert code == 3 and "ollama pull not-pulled:1b" in out, out
    code, out = _doctor(home, "http://127.0.0.1:9", standin.models[0])  # nothing listens on the discard port
    assert code == 3 and "not reachable" in out, out


def test_a_memory_problem_is_1_whatever_ollama_says(tmp_path: Path) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("x", encoding="utf-8")
    code, out = _doctor(afile, "http://127.0.0.1:9", "qwen2.5:7b")
    assert code == 1 and "is a file" in out, out
    checks = [Check("index", False, "stale"), Check("ollama", False, "down", fatal=False)]
    assert (exit_status(checks), exit_status(checks[1:]), exit_status([])) == (1, 3, 0)


def test_the_help_documents_the_exit_status() -> None:
    shown = runner.invoke(app, ["doctor", "--help"])
    assert shown.exit_code == 0
    text = " ".join(shown.output.replace("│", " ").split())
    assert "0 all is well" in text and "3 only Ollama" in text and "1 the data home" in text


def test_doctor_names_the_schema_and_the_vector_engine(tmp_path: Path) -> None:
    from sqlalchemy import create_engine, update

    from tianma.cli.doctor import schema_detail
    from tianma.settings import load_settings
    from tianma.storage import schema

    home = tmp_path / "home"
    _, out = _doctor(home, "http://127.0.0.1:9", "qwen2.5:7b")  # creates the home at the current schema
    assert f"schema v{schema.SCHEMA_VERSION}" in out and "Qdrant Edge" in out and "qdrant-edge-py" in out, out
    engine = create_engine(load_settings(home=home).sql_url)
    with engine.begin() as conn:  # as an older tianma left it
        conn.execute(update(schema.meta).values(value=str(schema.SCHEMA_VERSION - 1)))
    engine.dispose()
    detail = schema_detail(load_settings(home=home))
    assert f"schema v{schema.SCHEMA_VERSION - 1}" in detail and "backup" in detail
