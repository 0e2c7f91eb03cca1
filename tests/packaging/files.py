"""Readers of the packaging files (Dockerfile, compose.yaml, the systemd unit) for the tests, and
the check that an environment variable names a real tianma setting."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tianma.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = ROOT / "compose.yaml"
UNIT = ROOT / "packaging" / "tianma.service"
HEALTHCHECK = ROOT / "packaging" / "healthcheck.py"

def tool(name: str, hint: str, path: str | None = None) -> str:
    """The checker program ``name``, or skip on a developer machine; in CI (``CI=true``) the
    packaging files must be checked, so fail (.ci/run installs docker-compose and systemd, the dev
    extra hadolint)."""
    exe = shutil.which(name) or (shutil.which(name, path=path) if path else None)
    if exe is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{name} is not installed — CI must check the packaging files ({hint})")
        pytest.skip(f"{name} is not installed ({hint})")
    return exe


_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?([?-])([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class Instruction:
    keyword: str
    """Upper-case, e.g. ``RUN``."""
    args: str
    """The rest of the (continued) line."""


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[Instruction]:
    """The Dockerfile's instructions in order: comments dropped, ``\\`` continuations joined, runs of
    blanks made one space."""
    instructions: list[Instruction] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        instructions.append(Instruction(keyword.upper(), " ".join(args.split())))
        pending = ""
    return instructions


def unit_entries(path: Path = UNIT) -> list[tuple[str, str, str]]:
    """``(section, key, value)`` of a systemd unit, in order (keys such as ``Environment`` repeat)."""
    entries: list[tuple[str, str, str]] = []
    section = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        entries.append((section, key.strip(), value.strip()))
    return entries


def unit_environment(path: Path = UNIT) -> dict[str, str]:
    """The unit's ``Environment=NAME=value`` lines."""
    return dict(value.split("=", 1) for section, key, value in unit_entries(path)
                if section == "Service" and key == "Environment")  # fmt: skip


def unit_value(key: str, path: Path = UNIT) -> str:
    """The single value of ``key`` in the unit's ``[Service]`` section."""
    values = [value for section, k, value in unit_entries(path) if section == "Service" and k == key]
    assert len(values) == 1, f"{key}= appears {len(values)} times in {path.name}"
    return values[0]


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}``, as ``docker compose`` does.

    Raises:
        KeyError: a ``${VAR:?…}`` whose variable is unset or empty.
    """

    def one(match: re.Match[str]) -> str:
        name, op, word = match.group(1), match.group(2), match.group(3) or ""
        found = env.get(name, "")
        if found:
            return found
        if op == "?":
            raise KeyError(f"{name}: {word}")
        return word if op == "-" else ""

    return _INTERPOLATION.sub(one, value)


def setting_of(env_name: str) -> tuple[str, ...] | None:
    """The dotted path of the setting ``TIANMA_A__B`` sets (``("a", "b")``), or None when no
    setting of :class:`tianma.settings.Settings` has that name."""
    if not env_name.startswith("TIANMA_"):
        return None
    parts = tuple(env_name.removeprefix("TIANMA_").lower().split("__"))
    model: Any = Settings
    for depth, part in enumerate(parts):
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        annotation = model.model_fields[part].annotation
        model = annotation if depth < len(parts) - 1 else None
    return parts
