"""``tianma serve`` as a NAS user starts it: a real process, the stand-in Ollama behind it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.serve_process import free_port, wait_up
from tianma.testing.ollama_standin import OllamaStandin

MODEL = "qwen2.5:7b"


def test_serve_answers_keeps_the_turns_tree_and_stops_on_ctrl_c(tmp_path: Path, ollama_standin: OllamaStandin) -> None:
    port = free_port()
    env = {**os.environ, "TIANMA_HOME": str(tmp_path / "home"), "TIANMA_OLLAMA__BASE_URL": ollama_standin.base_url,
           "TIANMA_OLLAMA__MODEL": MODEL, "TIANMA_EMBEDDER__THREADS": "1"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", "from tianma.cli import main; main()", "serve", "--port", str(port), "--no-jobs"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, proc)
        r = httpx.post(f"{url}/api/chat", timeout=60, json={"model": MODEL, "stream": False,
                       "messages": [{"role": "user", "content": "我家的猫叫年糕"}]})  # fmt: skip
        assert r.status_code == 200 and r.json()["message"]["content"] == "你说：我家的猫叫年糕"
        event_id = r.headers["x-tianma-event-id"]
        deadline = time.monotonic() + 15  # spans reach spans.db in batches, about every second
        while time.monotonic() < deadline:
            page = httpx.get(f"{url}/ui/turns/{event_id}", timeout=10)
            if "generate" in page.text and "redline_check" in page.text:
                break
            time.sleep(0.5)
        assert page.status_code == 200 and "capture_signals" in page.text
        assert (tmp_path / "home" / "spans.db").is_file()
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
    assert f"tianma serve on {url}" in out and "Application shutdown complete" in out


def test_serve_refuses_an_open_address_without_keys(tmp_path: Path) -> None:
    env = {**os.environ, "TIANMA_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", "from tianma.cli import main; main()", "serve", "--host", "0.0.0.0", "--no-jobs"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "needs API keys" in done.stdout + done.stderr
