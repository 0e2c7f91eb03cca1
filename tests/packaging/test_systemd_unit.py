"""packaging/tianma.service, checked statically; ``systemd-analyze verify`` where it is installed.
tests/integration/test_systemd_unit.py starts its command line for real."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from tests.packaging.files import UNIT, setting_of, tool, unit_entries, unit_environment, unit_value
from tianma.cli import app


def test_runs_tianma_serve_from_a_venv_as_a_user_of_its_own() -> None:
    command = shlex.split(unit_value("ExecStart"))
    assert command[0].startswith("/opt/tianma/venv/bin/") and Path(command[0]).name == "tianma"
    assert command[1] == "serve"
    done = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*command[1:], "--help"])
    assert done.exit_code == 0, done.output
    for flag in (word for word in command[1:] if word.startswith("-")):
        assert flag in done.output
    assert unit_value("User") == unit_value("Group") == "tianma"


def test_the_data_home_is_the_one_writable_path() -> None:
    env = unit_environment()
    assert env["TIANMA_HOME"] == "/var/lib/tianma"
    assert unit_value("ReadWritePaths") == env["TIANMA_HOME"]
    assert f"/var/lib/{unit_value('StateDirectory')}" == env["TIANMA_HOME"]  # created, owned by User=
    assert unit_value("ProtectSystem") == "strict"  # everything else read-only


def test_every_variable_is_a_real_setting() -> None:
    env = unit_environment()
    assert set(env) == {"TIANMA_HOME", "TIANMA_OLLAMA__BASE_URL"}
    assert all(setting_of(name) is not None for name in env)


def test_stops_on_sigterm_restarts_on_failure_and_is_hardened() -> None:
    assert unit_value("KillSignal") == "SIGTERM"
    assert unit_value("Restart") == "on-failure"
    assert int(unit_value("TimeoutStopSec")) > 30  # serve gives a reflection in its model call 30 s
    for key in ("NoNewPrivileges", "PrivateTmp", "ProtectHome", "PrivateDevices"):
        assert unit_value(key) == "true", key
    assert ("Install", "WantedBy", "multi-user.target") in unit_entries()


def _verify(unit: Path) -> subprocess.CompletedProcess[str]:
    exe = tool("systemd-analyze", "Debian: apt-get install systemd")
    return subprocess.run([exe, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False)


def test_systemd_analyze_verify_accepts_it(tmp_path: Path) -> None:
    # the unit's venv does not exist here: verify the same unit with this interpreter's tianma script
    script = Path(sys.executable).parent / "tianma"
    assert script.is_file()
    text = UNIT.read_text(encoding="utf-8")
    unit = tmp_path / "tianma.service"
    unit.write_text(text.replace("/opt/tianma/venv/bin/tianma", str(script)), encoding="utf-8")
    done = _verify(unit)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    as_shipped = tmp_path / "shipped" / "tianma.service"
    as_shipped.parent.mkdir()
    as_shipped.write_text(text, encoding="utf-8")
    missing = _verify(as_shipped)  # it does check: the venv's script is not on this machine
    assert missing.returncode != 0 and "/opt/tianma/venv/bin/tianma" in missing.stderr
