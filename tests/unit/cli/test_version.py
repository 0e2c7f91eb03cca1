"""``tianma --version`` / ``-V``: the installed package's version, from its metadata."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tianma.cli.app import app

runner = CliRunner()


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_installed_packages_version(flag: str) -> None:
    done = runner.invoke(app, [flag])
    assert done.exit_code == 0, done.output
    assert done.output == f"tianma {version('tianma')}\n"


def test_the_version_is_the_one_pyproject_declares() -> None:
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
    assert runner.invoke(app, ["-V"]).output.split() == ["tianma", declared]


def test_version_is_listed_in_the_help_and_commands_still_run() -> None:
    assert "--version" in runner.invoke(app, ["--help"]).output
    done = runner.invoke(app, ["serve", "--help"])
    assert done.exit_code == 0 and "--port" in done.output
