"""Backup and export while a live ``tianma serve`` (a subprocess, in front of the Ollama
stand-in) records a stream of chat turns: restored into empty homes, every turn answered before
the copy began is there."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from typer.testing import CliRunner

from tianma import Settings
from tianma.cli.app import app
from tianma.cli.remote import find_server
from tianma.testing.ollama_standin import OllamaStandin

runner = CliRunner(env={"COLUMNS": "200", "TIANMA_EMBEDDER__THREADS": "1"})


def _events(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM records WHERE kind = 'event'")}


def test_backup_and_export_during_a_stream_of_turns_lose_none_answered_before(
    tmp_path: Path, ollama_standin: OllamaStandin
) -> None:
    home = tmp_path / "nas-home"
    env = {**os.environ, "TIANMA_HOME": str(home), "TIANMA_OLLAMA__BASE_URL": ollama_standin.base_url,
           "TIANMA_EMBEDDER__THREADS": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", "from tianma.cli import main; main()", "serve", "--port", "0",
                             "--no-jobs"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    answered: list[tuple[datetime, str]] = []  # (when the answer arrived, the turn's event)
    stop = threading.Event()
    failures: list[str] = []
    try:
        deadline = time.monotonic() + 90
        while (server := find_server(Settings(home=home))) is None:
            assert proc.poll() is None and time.monotonic() < deadline, "tianma serve did not come up"
            time.sleep(0.2)

        def chat() -> None:  # a user talking through the proxy while the copies are taken
            with httpx.Client(base_url=server.url, timeout=60, trust_env=False) as client:
                n = 0
                while not stop.is_set():
                    r = client.post("/api/chat", json={"model": "qwen2.5:7b", "stream": False, "messages": [
                        {"role": "user", "content": f"第{n}件事：我下周{n % 7 + 1}要去杭州出差"}]})  # fmt: skip
                    if r.status_code != 200:
                        failures.append(f"{r.status_code} {r.text[:200]}")
                        return
                    answered.append((datetime.now(UTC), r.headers["x-tianma-event-id"]))
                    n += 1

        talker = threading.Thread(target=chat)
        talker.start()
        while len(answered) < 5 and not failures:
            time.sleep(0.05)
        began_backup = datetime.now(UTC)
        backup = runner.invoke(app, ["backup", "--home", str(home), "--out", str(tmp_path / "b")])
        began_export = datetime.now(UTC)
        export = runner.invoke(app, ["export", "--home", str(home), "--out", str(tmp_path / "e.jsonl")])
        while len(answered) < len([a for a in answered if a[0] < began_export]) + 3 and not failures:
            time.sleep(0.05)  # turns go on after the copies
        stop.set()
        talker.join()
    finally:
        stop.set()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert failures == []
    assert backup.exit_code == 0, backup.output
    assert export.exit_code == 0, export.output
    assert proc.returncode == 0

    backed = {e for at, e in answered if at < began_backup}
    exported = {e for at, e in answered if at < began_export}
    assert len(backed) >= 5 and exported >= backed
    done = runner.invoke(app, ["restore", str(tmp_path / "b"), "--home", str(tmp_path / "from-backup")])
    assert done.exit_code == 0, done.output
    assert backed <= _events(tmp_path / "from-backup" / "tianma.db")
    done = runner.invoke(app, ["restore", str(tmp_path / "e.jsonl"), "--home", str(tmp_path / "from-export")])
    assert done.exit_code == 0, done.output
    assert exported <= _events(tmp_path / "from-export" / "tianma.db")
    assert {e for _, e in answered} <= _events(home / "tianma.db")  # and the live home has them all
