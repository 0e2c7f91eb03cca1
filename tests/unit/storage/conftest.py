"""Storage fixtures: an empty SQL store in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tianma.storage.sql_store import SqlMemoryStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlMemoryStore]:
    """An empty SQLite store (``tmp_path/m.db``), closed after the test."""
    s = SqlMemoryStore.from_url(f"sqlite:///{tmp_path / 'm.db'}")
    yield s
    s.close()
