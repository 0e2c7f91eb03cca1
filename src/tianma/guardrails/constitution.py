"""The constitution: identity, safety rules, privacy boundaries, forbidden behaviours.

A TOML file (the shipped one is ``tianma/guardrails/data/constitution.toml``; a user may point
``guardrails.constitution`` at an edited copy) read once, read-only, when a Runtime starts.
Nothing in tianma writes it: learnt changes that touch it are classified *forbidden* and wait
for a human, and a candidate too close to a clause in meaning trips the circuit breaker.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from tianma.errors import ConfigError

Section = Literal["identity", "safety", "privacy", "forbidden"]
SECTIONS: tuple[Section, ...] = ("identity", "safety", "privacy", "forbidden")


@dataclass(frozen=True, slots=True)
class Clause:
    id: str
    section: Section
    zh: str
    en: str

    @property
    def texts(self) -> tuple[str, str]:
        return self.zh, self.en


@dataclass(frozen=True, slots=True)
class Constitution:
    """The loaded constitution (immutable)."""

    name: str
    english_name: str
    identity: str
    """The first text of every system prompt."""
    clauses: tuple[Clause, ...]
    forbidden_terms: tuple[str, ...]
    """A learnt change mentioning one of these touches the constitution (forbidden zone)."""
    caution_terms: tuple[str, ...]
    """Style, length, depth, order, tools, humour: semi-automatic changes (caution zone)."""
    source: str
    """Where it was read from."""
    digest: str
    """SHA-256 of the file's bytes, recorded in reports so a run says which constitution judged it."""


def shipped_path() -> Path:
    """The constitution that ships with tianma."""
    return Path(str(resources.files("tianma.guardrails") / "data" / "constitution.toml"))


def load_constitution(path: Path | None = None) -> Constitution:
    """Read a constitution file (``None``: the shipped one).

    Raises:
        ConfigError: the file is missing, not TOML, or lacks a field.
    """
    path = path.expanduser() if path is not None else shipped_path()
    try:
        raw = path.read_bytes()  # read-only: tianma never opens this file for writing
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"constitution file {path}: cannot be read ({exc.strerror})") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"constitution file {path}: not valid TOML ({exc})") from None
    stray = sorted({k for c in data.get("clauses", []) for k in c} - {"id", "section", "zh", "en"})
    if stray:  # in TOML a top-level key written after [[clauses]] silently belongs to the last clause
        raise ConfigError(f"constitution file {path}: unknown clause field(s) {', '.join(stray)} "
                          "(top-level keys must come before the first [[clauses]])")  # fmt: skip
    try:
        clauses = tuple(
            Clause(
                str(c["id"]), _section(str(c["section"]), path), str(c["zh"]).strip(), str(c["en"]).strip()
            )
            for c in data["clauses"]
        )
        constitution = Constitution(
            name=str(data["name"]),
            english_name=str(data["english_name"]),
            identity=str(data["identity"]).strip(),
            clauses=clauses,
            forbidden_terms=tuple(str(t).lower() for t in data.get("forbidden_terms", [])),
            caution_terms=tuple(str(t).lower() for t in data.get("caution_terms", [])),
            source=str(path),
            digest=hashlib.sha256(raw).hexdigest(),
        )
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"constitution file {path}: missing or malformed field {exc}") from None
    if not constitution.identity or not clauses:
        raise ConfigError(f"constitution file {path}: identity and at least one clause are required")
    return constitution


def _section(value: str, path: Path) -> Section:
    for section in SECTIONS:
        if value == section:
            return section
    raise ConfigError(f"constitution file {path}: section {value!r} is not one of {', '.join(SECTIONS)}")
