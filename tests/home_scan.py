"""The raw bytes of every file under a data home, searched for text the tests say is gone."""

from __future__ import annotations

import json
from pathlib import Path


def home_bytes(home: Path) -> list[tuple[Path, bytes]]:
    """Every file under ``home`` (SQLite files with their WAL, vectors, checkpoints, spans, logs)."""
    return [(f, f.read_bytes()) for f in sorted(home.rglob("*")) if f.is_file()]


def files_holding(home: Path, text: str) -> list[str]:
    """Files under ``home`` whose bytes hold ``text`` in any case, as UTF-8 or JSON-escaped
    (``\\uXXXX``, as SQL JSON columns store it); paths relative to ``home``."""
    forms = {text.lower().encode(), json.dumps(text)[1:-1].lower().encode()}
    return [str(f.relative_to(home)) for f, raw in home_bytes(home) if any(x in raw.lower() for x in forms)]


def files_holding_bytes(home: Path, needle: bytes) -> list[str]:
    """Files under ``home`` whose raw bytes hold ``needle`` (a stored vector, say)."""
    return [str(f.relative_to(home)) for f, raw in home_bytes(home) if needle in raw]
