"""A command that needs nothing but SQL never opens the vector index: it works while another
process (here: another shard in this one) holds the vector index, and the rest says why not."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import RuntimeFactory
from tianma import Settings
from tianma.cli.app import app, open_runtime
from tianma.cli.connection import DirectConnection
from tianma.errors import BackendUnavailableError
from tianma.memory.index_check import IndexDiff
from tianma.operations import learning as learning_ops
from tianma.operations import memory as memory_ops
from tianma.operations.homes import DirectHome
from tianma.storage.edge_index import EdgeVectorIndex

T0 = datetime(2026, 2, 1, tzinfo=UTC)
runner = CliRunner(env={"COLUMNS": "200", "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"})


@pytest.fixture
def home(make_runtime: RuntimeFactory) -> Path:
    rt = make_runtime()
    rt.chat("me", "我的生日是五月三日。", dialogue_id="d1", at=T0)
    rt.close()
    return rt.settings.home


@pytest.fixture
def index_held(home: Path) -> Iterator[None]:
    """The vector index locked by someone else (an Edge shard's write-ahead log admits one)."""
    holder = EdgeVectorIndex(home / "vectors", 384)
    yield
    holder.close()


def _ok(*args: str, home: Path) -> str:
    done = runner.invoke(app, [*args, "--home", str(home)])
    assert done.exit_code == 0, (args, done.output, done.exception)
    return done.output


def test_reads_of_sql_work_while_the_index_is_held(home: Path, index_held: None) -> None:
    listed = _ok("memory", "list", home=home)
    assert "1 records" in listed and "我的生日是五月三日" in listed
    record_id = _only_id(home)
    assert "source events" in _ok("memory", "show", record_id[:8], home=home)
    assert "(current)" in _ok("memory", "history", record_id[:8], home=home)
    assert "0 review(s)" in _ok("review", home=home)
    assert "0 strategies" in _ok("strategies", "list", home=home)
    assert "no conflicts" in _ok("strategies", "conflicts", home=home)
    assert "now (due)" in _ok("jobs", "list", home=home)


def test_what_needs_the_index_says_who_holds_it(home: Path, index_held: None) -> None:
    forgot = runner.invoke(app, ["memory", "forget", _only_id(home)[:8], "--yes", "--home", str(home)])
    assert isinstance(forgot.exception, BackendUnavailableError)
    assert "in use by another tianma process" in str(forgot.exception) and "请先停止它" in str(
        forgot.exception
    )
    doctor = runner.invoke(app, ["doctor", "--home", str(home)])
    assert doctor.exit_code == 1 and "in use by another tianma process" in doctor.output
    assert "Traceback" not in doctor.output


def test_a_direct_home_opens_the_runtime_only_when_an_operation_needs_it(home: Path) -> None:
    with DirectHome(Settings(home=home), open_runtime) as direct:
        conn = DirectConnection(direct)
        (record,) = conn.call(memory_ops.list_memories, "me")
        assert conn.call(memory_ops.list_reviews, None, None) == []
        assert {j.name for j in conn.call(learning_ops.list_jobs)} >= {"decay", "reflection"}
        assert not direct.opened_runtime
        assert conn.call(memory_ops.count_index) == [IndexDiff("me", 1, 1, 1)]
        assert direct.opened_runtime
        assert conn.call(memory_ops.forget, "me", record.id) == 1
    with DirectHome(Settings(home=home), open_runtime) as direct:  # closed above: the index is free again
        assert DirectConnection(direct).call(memory_ops.count_index) == []
        assert direct.store.list_records("me") == []


def _only_id(home: Path) -> str:
    with DirectHome(Settings(home=home), open_runtime) as direct:
        (record,) = direct.store.list_records("me")
        return record.id
