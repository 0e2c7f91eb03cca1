"""Finding the server of a home from its serve.json, and running operations in it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RuntimeFactory
from tianma import Runtime, Settings
from tianma.cli.remote import RemoteConnection, find_server
from tianma.errors import BackendUnavailableError, RecordNotFoundError, TianmaError
from tianma.operations import memory as ops
from tianma.serve import create_app, serve_file
from tianma.serve.serve_file import ServeInfo
from tianma.testing.server import ServerThread


@dataclass
class Running:
    runtime: Runtime
    url: str
    token: str

    @property
    def home(self) -> Path:
        return self.runtime.settings.home


@pytest.fixture
def running(make_runtime: RuntimeFactory) -> Iterator[Running]:
    rt = make_runtime()
    token = serve_file.new_token()
    with ServerThread(create_app(rt, scheduler=False, admin_token=token, background_learning=False)) as url:
        yield Running(rt, url, token)


def _publish(home: Path, url: str, token: str, pid: int | None = None) -> ServeInfo:
    info = serve_file.describe(home, url, token, pid)
    serve_file.write(home, info)
    return info


def test_a_live_server_of_this_home_is_found(running: Running) -> None:
    info = _publish(running.home, running.url, running.token)
    assert find_server(Settings(home=running.home)) == info


def test_no_file_a_dead_pid_or_no_answer_is_no_server(running: Running, tmp_path: Path) -> None:
    settings = Settings(home=running.home)
    assert find_server(settings) is None
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _publish(running.home, running.url, running.token, pid=gone.pid)
    assert find_server(settings) is None
    _publish(running.home, "http://127.0.0.1:9", running.token)  # alive, but nothing listens there
    assert find_server(settings) is None


def test_a_server_of_another_home_or_that_refuses_the_token_is_no_server(
    running: Running, tmp_path: Path
) -> None:
    other = tmp_path / "other-home"
    _publish(other, running.url, running.token)  # a copied file: the server answers for its own home
    assert find_server(Settings(home=other)) is None
    _publish(running.home, running.url, serve_file.new_token())
    assert find_server(Settings(home=running.home)) is None


def test_operations_run_there_and_errors_come_back_as_raised(running: Running) -> None:
    running.runtime.ingest("me", [{"role": "user", "text": "我对花生过敏", "at": "2026-02-01T08:00:00+00:00",
                                   "dialogue_id": "d1"}])  # fmt: skip
    info = _publish(running.home, running.url, running.token)
    with RemoteConnection(info) as conn:
        (record,) = conn.call(ops.list_memories, "me", "event")
        assert record == running.runtime.memories("me")[0]
        assert conn.call(ops.find_record, "me", record.id[:6]) == record
        with pytest.raises(RecordNotFoundError, match="no record 'zzz' for user me"):
            conn.call(ops.find_record, "me", "zzz")
        assert conn.call(ops.forget, "me", record.id) == 1
    assert running.runtime.memories("me") == []


def test_a_server_that_goes_away_is_one_clear_error(tmp_path: Path) -> None:
    info = serve_file.describe(tmp_path, "http://127.0.0.1:9", serve_file.new_token(), pid=os.getpid())
    with RemoteConnection(info) as conn, pytest.raises(BackendUnavailableError, match="lost tianma serve"):
        conn.call(ops.list_memories, "me")


def test_a_wrong_token_is_refused_not_obeyed(running: Running) -> None:
    running.runtime.ingest("me", [{"role": "user", "text": "你好", "at": "2026-02-01T08:00:00+00:00",
                                   "dialogue_id": "d1"}])  # fmt: skip
    info = _publish(running.home, running.url, "w" * 43)
    with RemoteConnection(info) as conn, pytest.raises(TianmaError, match="wrong admin token"):
        conn.call(ops.forget, "me", None)
    assert len(running.runtime.memories("me")) == 1
