"""``<home>/serve.json``: owner-only, atomic, removed only by the run that wrote it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tianma.serve import serve_file


def test_written_for_the_owner_only_and_read_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    info = serve_file.describe(home, "http://127.0.0.1:11435", serve_file.new_token())
    path = serve_file.write(home, info)
    assert path == home / "serve.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert serve_file.read(home) == info
    assert info.pid == os.getpid() and info.home == str(home.resolve())
    assert [p.name for p in home.iterdir()] == ["serve.json"]  # no temporary file left


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"url": "x"}', '{"url": 1, "pid": "2", "token": 3, '
                                     '"home": "h", "started_at": "t"}'])  # fmt: skip
def test_a_file_this_version_did_not_write_is_no_server(tmp_path: Path, content: str) -> None:
    (tmp_path / "serve.json").write_text(content, encoding="utf-8")
    assert serve_file.read(tmp_path) is None


def test_removed_only_by_the_run_that_wrote_it(tmp_path: Path) -> None:
    mine, other = serve_file.new_token(), serve_file.new_token()
    assert mine != other and len(mine) >= 40
    serve_file.write(tmp_path, serve_file.describe(tmp_path, "http://127.0.0.1:1", mine))
    serve_file.remove(tmp_path, other)  # a second server that failed to start
    assert serve_file.read(tmp_path) is not None
    serve_file.remove(tmp_path, mine)
    assert not serve_file.path_of(tmp_path).exists()
    serve_file.remove(tmp_path, mine)  # nothing left: no error


def test_a_dead_process_is_not_alive() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert not serve_file.is_alive(gone.pid)
    assert serve_file.is_alive(os.getpid())
    assert not serve_file.is_alive(0) and not serve_file.is_alive(-1)


@pytest.mark.parametrize(("host", "url"), [("127.0.0.1", "http://127.0.0.1:80"), ("0.0.0.0", "http://127.0.0.1:80"),
                                           ("::", "http://[::1]:80"), ("::1", "http://[::1]:80"),
                                           ("192.168.1.5", "http://192.168.1.5:80")])  # fmt: skip
def test_a_wildcard_bind_is_reached_over_loopback(host: str, url: str) -> None:
    assert serve_file.local_url(host, 80) == url
