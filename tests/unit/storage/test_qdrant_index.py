"""Local mode's one-client-per-folder lock: refused with what to do, nothing leaked."""

from __future__ import annotations

from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from tianma.errors import BackendUnavailableError
from tianma.storage.qdrant_index import QdrantVectorIndex, is_locked


def test_a_held_folder_is_refused_with_what_to_do_and_freed_on_close(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    assert not is_locked(folder)  # never opened: no lock file yet
    first = QdrantVectorIndex.from_options(dim=4, path=folder)
    assert is_locked(folder)
    # filterwarnings=error: a client that failed to lock would leak its lock file (ResourceWarning)
    with pytest.raises(BackendUnavailableError, match="in use by another tianma process: stop it first"):
        QdrantVectorIndex.from_options(dim=4, path=folder)
    first.close()
    assert not is_locked(folder)
    QdrantVectorIndex.from_options(dim=4, path=folder).close()


def test_a_foreign_client_holds_it_too(tmp_path: Path) -> None:
    holder = QdrantClient(path=str(tmp_path))
    try:
        assert is_locked(tmp_path)
    finally:
        holder.close()
    assert not is_locked(tmp_path)
