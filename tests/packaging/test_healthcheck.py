"""packaging/healthcheck.py finds the port and a key as ``tianma serve`` does (it cannot import
tianma: that costs ~2 s of CPU every 30 s on a NAS), and says unhealthy when nothing answers."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.packaging.files import HEALTHCHECK
from tianma.settings import load_settings


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tianma_healthcheck", HEALTHCHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


healthcheck = _load()

CASES = {
    "defaults": ({}, ""),
    "environment": ({"TIANMA_SERVE__PORT": "12000", "TIANMA_SERVE__ADMIN_KEYS": '["admin-key-0123456789"]'}, ""),
    "users only": ({"TIANMA_SERVE__API_KEYS": '{"user-key-0123456789": "mum"}'}, ""),
    "toml": ({}, '[serve]\nport = 12001\nadmin_keys = ["toml-admin-key"]\n[serve.api_keys]\n"toml-user-key" = "me"\n'),
    "environment over toml": ({"TIANMA_SERVE__PORT": "12002"}, "[serve]\nport = 12001\n"),
}


@pytest.mark.parametrize("case", CASES)
def test_port_and_key_are_the_ones_serve_uses(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, toml = CASES[case]
    if toml:
        (tmp_path / "tianma.toml").write_text(toml, encoding="utf-8")
    environ = {"TIANMA_HOME": str(tmp_path), **env}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    serve = load_settings().serve
    keys = [*serve.admin_keys, *serve.api_keys]
    assert healthcheck.port_and_key(environ) == (serve.port, keys[0] if keys else None)


def test_nothing_listening_is_unhealthy(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        env = {"TIANMA_HOME": str(tmp_path), "TIANMA_SERVE__PORT": str(port)}
        done = subprocess.run([sys.executable, str(HEALTHCHECK)], env=env, capture_output=True, text=True,
                              timeout=30, check=False)  # fmt: skip
    assert done.returncode == 1 and f"does not answer on port {port}" in done.stderr


def test_it_imports_nothing_of_tianma() -> None:
    code = (f"import json, runpy, sys\nrunpy.run_path({str(HEALTHCHECK)!r}, run_name='not_main')\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('tianma', 'pydantic', 'numpy'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
