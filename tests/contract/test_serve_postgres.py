"""The README's "Scaling out" as written: ``tianma serve`` with ``TIANMA_SQL__URL`` on PostgreSQL,
a real process behind the stand-in Ollama — turns answered and remembered there, the reflection
they ask for queued in the job table and run by the server's own thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.serve_process import free_port, wait_up
from tianma.testing.ollama_standin import OllamaStandin

MODEL = "qwen2.5:7b"


def _rows(url: str, query: str) -> list[tuple[object, ...]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(query)).all()]
    finally:
        engine.dispose()


def test_serve_on_postgres_answers_remembers_and_queues_learning(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    port = free_port()
    with OllamaStandin() as ollama:
        env = {**os.environ, "TIANMA_HOME": str(tmp_path / "home"), "TIANMA_SQL__URL": postgres_url,
               "TIANMA_OLLAMA__BASE_URL": ollama.base_url, "TIANMA_OLLAMA__MODEL": MODEL,
               "TIANMA_EMBEDDER__THREADS": "1", "TIANMA_LEARNING__EVERY_MESSAGES": "2"}  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-c", "from tianma.cli import main; main()", "serve", "--port", str(port), "--no-jobs"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            wait_up(url, proc, seconds=90)
            history: list[dict[str, str]] = []
            for said in ("以后回答先给结论。", "我家的猫叫年糕。"):
                history.append({"role": "user", "content": said})
                r = httpx.post(f"{url}/api/chat", timeout=60, json={"model": MODEL, "stream": False, "messages": history})
                assert r.status_code == 200, r.text
                history.append(r.json()["message"])
            events = _rows(postgres_url, "SELECT content FROM records WHERE kind = 'event'")
            assert any("年糕" in str(row[0]) for row in events)
            deadline = time.monotonic() + 60
            while not _rows(postgres_url, "SELECT 1 FROM jobs WHERE kind = 'reflection' AND status = 'done'"):
                assert time.monotonic() < deadline, _rows(postgres_url, "SELECT status, error FROM jobs")
                time.sleep(0.5)
            assert _rows(postgres_url, "SELECT count(*) FROM checkpoints") == [(1,)]  # the dialogue's window
            assert not (tmp_path / "home" / "checkpoints.db").exists()
            while len(_rows(postgres_url, "SELECT 1 FROM spans WHERE name = 'invoke_agent tianma'")) < 2:
                assert time.monotonic() < deadline, "the turns' spans never reached PostgreSQL"
                time.sleep(0.5)  # the batch processor writes within about a second
            assert not (tmp_path / "home" / "spans.db").exists()  # spans in the shared database, not a file
        finally:
            proc.send_signal(signal.SIGINT)
            out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
