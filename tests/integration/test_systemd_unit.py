"""The install without Docker, for real: ``tianma serve`` started as packaging/tianma.service starts
it — its ExecStart and Environment= lines, in an environment as bare as systemd's — in front of the
Ollama stand-in; a chat turn; SIGTERM as ``systemctl stop`` sends it; a clean exit; the turn still
there when the home is opened again.

What differs from systemd, and why: the script is this interpreter's ``tianma`` (the unit's
``/opt/tianma/venv`` does not exist here, and a fresh venv per run takes minutes); the data home is
a temporary folder and Ollama the stand-in (both are the unit's own variables, given other values);
``TIANMA_SERVE__PORT`` picks a free port; ``OMP_NUM_THREADS=1`` as everywhere in the tests. The
sandboxing options (ProtectSystem, PrivateTmp …) need systemd itself and are not applied.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.packaging.files import HEALTHCHECK, unit_environment, unit_value
from tests.serve_process import free_port, wait_up
from tianma.testing.ollama_standin import OllamaStandin

MODEL = "qwen2.5:7b"
UNIT_SCRIPT = "/opt/tianma/venv/bin/tianma"


def _unit_command_and_env(home: Path, ollama_url: str, port: int) -> tuple[list[str], dict[str, str]]:
    command = shlex.split(unit_value("ExecStart"))
    assert command[0] == UNIT_SCRIPT
    script = Path(sys.executable).parent / "tianma"
    assert script.is_file(), "the tianma console script is not installed beside this interpreter"
    unit_env = unit_environment()
    assert set(unit_env) == {"TIANMA_HOME", "TIANMA_OLLAMA__BASE_URL"}  # the two given other values below
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home.parent),
           **unit_env, "TIANMA_HOME": str(home), "TIANMA_OLLAMA__BASE_URL": ollama_url,
           "TIANMA_SERVE__PORT": str(port), "OMP_NUM_THREADS": "1"}  # fmt: skip
    return [str(script), *command[1:]], env


@pytest.mark.slow
def test_serve_as_the_unit_starts_it_stops_on_sigterm_with_the_turn_kept(
    tmp_path: Path, ollama_standin: OllamaStandin
) -> None:
    home = tmp_path / "var-lib-tianma"
    port = free_port()
    command, env = _unit_command_and_env(home, ollama_standin.base_url, port)
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(f"{url}/api/version", proc, seconds=90)
        served = json.loads((home / "serve.json").read_text(encoding="utf-8"))
        assert served["pid"] == proc.pid
        r = httpx.post(f"{url}/api/chat", timeout=60, json={"model": MODEL, "stream": False,
                       "messages": [{"role": "user", "content": "我家的猫叫年糕，今年三岁"}]})  # fmt: skip
        assert r.status_code == 200 and r.json()["message"]["content"] == "你说：我家的猫叫年糕，今年三岁"
        event_id = r.headers["x-tianma-event-id"]
        health = subprocess.run([sys.executable, str(HEALTHCHECK)], env=env, capture_output=True, text=True,
                                timeout=30, check=False)  # fmt: skip
        assert health.returncode == 0, health.stderr  # the image's healthcheck, against the real server
        backup = subprocess.run([command[0], "backup", "--out", str(tmp_path / "backup")], env=env,
                                capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert backup.returncode == 0, backup.stdout + backup.stderr  # beside the running server
    finally:
        proc.send_signal(signal.SIGTERM)  # systemctl stop (KillSignal=SIGTERM)
        started = time.monotonic()
        out = proc.communicate(timeout=45)[0]  # the unit's TimeoutStopSec
    assert proc.returncode == 0, out
    assert time.monotonic() - started < 30, "serve took longer than a stop should"
    assert "Application shutdown complete" in out
    assert not (home / "serve.json").exists()  # removed on a clean exit

    # the home opened again, as the unit's user would: the turn is there, the index agrees with SQL
    listed = subprocess.run([command[0], "memory", "list", "--kind", "event"], env=env, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert event_id[:8] in listed.stdout and "年糕" in listed.stdout
    doctor = subprocess.run([command[0], "doctor"], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    # the backup taken while it ran, restored into an empty home, holds the turn
    other = {**env, "TIANMA_HOME": str(tmp_path / "restored")}
    restored = subprocess.run([command[0], "restore", str(tmp_path / "backup")], env=other, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip
    assert restored.returncode == 0, restored.stdout + restored.stderr
    listed = subprocess.run([command[0], "memory", "list", "--kind", "event"], env=other, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert event_id[:8] in listed.stdout and "年糕" in listed.stdout
