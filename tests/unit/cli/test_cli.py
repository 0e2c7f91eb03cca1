"""The CLI end to end: the installed entry point, memory commands, doctor, index repair and rebuild."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakes import ScriptedChatModel
from tianma import Runtime, Settings
from tianma.cli.app import app

T0 = datetime(2026, 2, 1, tzinfo=UTC)
runner = CliRunner(env={"COLUMNS": "200"})


def tianma(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("tianma", path=str(Path(sys.executable).parent))
    assert exe is not None, "the tianma entry point is not installed"
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [exe, *args], capture_output=True, text=True, env=full_env, timeout=300, check=False
    )


def test_demo_shows_memory_across_dialogues(tmp_path: Path) -> None:
    done = tianma("demo", "--home", str(tmp_path / "demo"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "DEMO" in out and "not an LLM" in out
    assert "你说过周末不要安排提醒" in out
    assert "你叫李明" in out
    assert "以后周末别给我安排提醒" in out  # shown as the injected memory behind the reply


def test_a_bad_setting_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    done = tianma("memory", "list", env={"TIANMA_HOME": str(tmp_path), "TIANMA_OLLAMA__TIMEOUT_S": "soon"})
    assert done.returncode == 1
    output = (done.stdout + done.stderr).strip()
    assert "Traceback" not in output
    assert "TIANMA_OLLAMA__TIMEOUT_S" in output and len(output.splitlines()) <= 2


@pytest.fixture
def home(tmp_path: Path, e5: object) -> Path:
    path = tmp_path / "cli-home"
    with Runtime(Settings(home=path), chat_model=ScriptedChatModel(replies=["好"]), embedder=e5) as rt:  # type: ignore[arg-type]
        rt.chat("me", "我的生日是五月三日。", dialogue_id="d1", at=T0)
        rt.chat("me", "我喜欢爵士乐。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    return path


def test_memory_list_show_forget(home: Path) -> None:
    listed = runner.invoke(app, ["memory", "list", "--home", str(home)])
    assert listed.exit_code == 0, listed.output
    assert "我的生日是五月三日" in listed.output and "2 records" in listed.output
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel()) as rt:
        birthday = next(r for r in rt.memories("me") if "生日" in r.content)
    shown = runner.invoke(app, ["memory", "show", birthday.id[:8], "--home", str(home)])
    assert shown.exit_code == 0 and birthday.id in shown.output and "source events" in shown.output
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel()) as rt:
        jazz = next(r for r in rt.memories("me", kind="event") if "爵士乐" in r.content)
        assert "subject_vector" in jazz.data  # a statement keeps the vector it is compared by …
    stated = runner.invoke(app, ["memory", "show", jazz.id[:8], "--home", str(home)])
    assert "statement" in stated.output and "subject_vector" not in stated.output  # … not shown as text
    refused = runner.invoke(app, ["memory", "forget", birthday.id[:8], "--home", str(home)], input="n\n")
    assert refused.exit_code != 0
    forgot = runner.invoke(app, ["memory", "forget", birthday.id[:8], "--yes", "--home", str(home)])
    assert forgot.exit_code == 0 and "deleted 1" in forgot.output
    after = runner.invoke(app, ["memory", "list", "--home", str(home)])
    assert "生日" not in after.output and "爵士乐" in after.output


def test_memory_forget_one_dialogue(home: Path) -> None:
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel(replies=["好"])) as rt:
        rt.chat("me", "另一个对话：我养了一只猫。", dialogue_id="d2", at=T0 + timedelta(days=1))
    unknown = runner.invoke(app, ["memory", "forget", "--dialogue", "nope", "--yes", "--home", str(home)])
    assert "no dialogue nope" in str(unknown.exception)
    both = runner.invoke(app, ["memory", "forget", "--dialogue", "d1", "--all", "--yes", "--home", str(home)])
    assert "--dialogue" in str(both.exception)
    forgot = runner.invoke(app, ["memory", "forget", "--dialogue", "d1", "--yes", "--home", str(home)])
    assert forgot.exit_code == 0 and "deleted 2" in forgot.output
    after = runner.invoke(app, ["memory", "list", "--home", str(home)])
    assert "生日" not in after.output and "爵士乐" not in after.output and "猫" in after.output


def test_doctor_warns_about_ollama_and_catches_a_stale_index(home: Path, tmp_path: Path) -> None:
    env = {"TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"}  # nothing listens on the discard port
    healthy = runner.invoke(app, ["doctor", "--home", str(home)], env=env)
    assert healthy.exit_code == 3, healthy.output  # memory is fine; only Ollama is missing
    assert "not reachable" in healthy.output and "2 records, 2 vectors, 2 keyword" in healthy.output
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel()) as rt:
        rt.memory.vectors.drop_user("me")
    stale = runner.invoke(app, ["doctor", "--home", str(home)], env=env)
    assert stale.exit_code == 1 and "2 missing vectors" in stale.output and "index repair" in stale.output
    repaired = runner.invoke(app, ["index", "repair", "--home", str(home)])
    assert repaired.exit_code == 0 and "indexed 2, removed 0" in repaired.output
    assert runner.invoke(app, ["doctor", "--home", str(home)], env=env).exit_code == 3
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel()) as rt:  # same counts, wrong ids
        (one, _) = [r.id for r in rt.memories("me")]
        vector = rt.memory.vectors.get_vectors("me", [one])[one]
        rt.memory.vectors.delete("me", [one])
        rt.memory.vectors.upsert("me", ["00000000-0000-4000-8000-000000000000"], vector[None, :])
    mixed = runner.invoke(app, ["doctor", "--home", str(home)], env=env)
    assert mixed.exit_code == 1 and "1 missing vectors" in mixed.output and "1 orphan vectors" in mixed.output
    assert "indexed 1, removed 1" in runner.invoke(app, ["index", "repair", "--home", str(home)]).output
    rebuilt = runner.invoke(app, ["index", "rebuild", "--home", str(home)])
    assert rebuilt.exit_code == 0 and "indexed 2" in rebuilt.output
    assert runner.invoke(app, ["doctor", "--home", str(home)], env=env).exit_code == 3


def test_reflect_history_undo_maintain_and_strategies(tmp_path: Path, e5: object) -> None:
    path = tmp_path / "learn-home"
    model = ScriptedChatModel(replies=["好"])
    with Runtime(Settings(home=path), chat_model=model, embedder=e5) as rt:  # type: ignore[arg-type]
        rt.chat("me", "我对花生过敏。", dialogue_id="d1", at=T0)
    env = {"TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"}  # no LLM: the rule-based pass still learns
    dry = runner.invoke(app, ["reflect", "--user", "me", "--dry-run", "--home", str(path)], env=env)
    assert dry.exit_code == 0, dry.output
    assert "would_create" in dry.output and "LLM not asked: the rule pass settled every statement" in dry.output
    done = runner.invoke(app, ["reflect", "--home", str(path)], env=env)
    assert done.exit_code == 0 and "created_pending" in done.output
    run_id = done.output.split("run ", 1)[1].split()[0]
    listed = runner.invoke(app, ["memory", "list", "--kind", "fact", "--home", str(path)])
    assert "花生" in listed.output and "pending" in listed.output
    with Runtime(Settings(home=path), chat_model=model, embedder=e5) as rt:  # type: ignore[arg-type]
        (fact,) = rt.memories("me", kind="fact")
    history = runner.invoke(app, ["memory", "history", fact.id[:8], "--home", str(path)])
    assert history.exit_code == 0 and "(current)" in history.output
    undone = runner.invoke(app, ["reflect", "undo", run_id, "--home", str(path)])
    assert undone.exit_code == 0 and "restored 1" in undone.output
    assert "花生" not in runner.invoke(app, ["memory", "list", "--kind", "fact", "--home", str(path)]).output
    assert runner.invoke(app, ["maintain", "--home", str(path)]).exit_code == 0
    strategies = runner.invoke(app, ["strategies", "list", "--home", str(path)])
    assert strategies.exit_code == 0 and "0 strategies" in strategies.output


def test_review_approve_reject_rollback_and_conflicts(tmp_path: Path, e5: object) -> None:
    from tianma.storage.records import Provenance

    path = tmp_path / "review-home"
    with Runtime(Settings(home=path), chat_model=ScriptedChatModel(replies=["好"]), embedder=e5) as rt:  # type: ignore[arg-type]
        for content, priority in (
            ("回答代码问题时要简短", 0),
            ("回答代码问题时要详细", 0),
            ("回答问题时先给结论", 1),
        ):
            record = rt.memory.store.add_record(
                "me", "strategy", content, Provenance(source="test"), at=T0, status="pending",
                data={"trigger": {"domains": ["tech"]}, "priority": priority, "zone": "caution"},
            )  # fmt: skip
            with rt.memory.store.engine.begin() as conn:
                from tianma.memory.reviews import queue

                queue(conn, user_id="me", record_id=record.id, run_id=None, kind="strategy", content=content,
                      zone="caution", mode="confirm", reason="caution zone", preview={"before": [], "after": [content]},
                      evidence=[], at=T0)  # fmt: skip
    listed = runner.invoke(app, ["review", "--home", str(path)])
    assert listed.exit_code == 0 and "3 review(s)" in listed.output and "caution zone" in listed.output
    with Runtime(Settings(home=path), chat_model=ScriptedChatModel(replies=["好"]), embedder=e5) as rt:  # type: ignore[arg-type]
        ids = {r.content: r.id for r in rt.pending("me")}
        strategy = {r.content: r.id for r in rt.memories("me", kind="strategy")}
    for content in ("回答代码问题时要简短", "回答代码问题时要详细"):
        done = runner.invoke(
            app, ["review", "approve", ids[content][:8], "--reason", "ok", "--home", str(path)]
        )
        assert done.exit_code == 0 and "approved" in done.output
    rejected = runner.invoke(
        app, ["review", "reject", ids["回答问题时先给结论"], "--reason", "不要", "--home", str(path)]
    )
    assert rejected.exit_code == 0 and "rejected" in rejected.output
    conflicts = runner.invoke(app, ["strategies", "conflicts", "--home", str(path)])
    assert "1 conflict" in conflicts.output and "opposite" in conflicts.output
    rolled = runner.invoke(
        app, ["strategies", "rollback", strategy["回答代码问题时要简短"][:8], "--home", str(path)]
    )
    assert rolled.exit_code == 0 and "version 1 restored as version 3" in rolled.output
    assert "no conflicts" in runner.invoke(app, ["strategies", "conflicts", "--home", str(path)]).output
    again = runner.invoke(app, ["review", "approve", ids["回答问题时先给结论"][:8], "--home", str(path)])
    assert again.exit_code != 0
