"""Moving a data home's vectors from qdrant-client's local mode (``<home>/qdrant``, what tianma
used before Qdrant Edge) into an Edge shard (``<home>/vectors``), once, when the home is opened.

The vectors are copied, not re-embedded: reading 100k points out of local mode takes seconds,
embedding them again half an hour. The copy is built beside the target (``vectors.partial``) and
renamed into place only when complete, so a crash leaves the old folder untouched and the next
open starts the copy again; the old folder is removed once the new one is in place (it may hold
vectors of forgotten records in its SQLite free pages). Vectors of another length than the
embedder's (the embedder changed too) are not copied: the caller's repair re-embeds whatever the
new shard lacks.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tianma.errors import ConfigError
from tianma.storage.edge_index import EdgeVectorIndex
from tianma.storage.qdrant_index import QdrantVectorIndex

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""Told ``(done, total)`` as points are copied."""

_CHUNK = 1024


def is_local_mode(path: Path) -> bool:
    """Whether ``path`` is a folder of qdrant-client's local mode."""
    return (path / "meta.json").is_file() or (path / "collection").is_dir()


def migrate_local_mode(
    old: Path, new: Path, dim: int, users: Sequence[str], prefix: str = "tianma", progress: Progress | None = None
) -> int | None:
    """Copy every user's vectors from the local-mode folder ``old`` into a new Edge shard at
    ``new``; ``None`` when there was nothing to migrate, else how many vectors were copied.

    Raises:
        BackendUnavailableError: another process holds ``old``.
    """
    if (new / "edge_config.json").is_file():
        if old.exists() and is_local_mode(old):  # a crash between the rename and the removal
            shutil.rmtree(old)
        return None
    if not is_local_mode(old):
        return None
    partial = new.with_name(new.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    source = QdrantVectorIndex.from_options(dim=dim, path=old, prefix=prefix)
    target = EdgeVectorIndex(partial, dim)
    copied = 0
    try:
        counts = {u: source.count(u) for u in users}
        total = sum(counts.values())
        log.info("moving %d vectors from %s to Qdrant Edge in %s", total, old, new)
        for user_id in (u for u, n in counts.items() if n):
            ids = sorted(source.ids(user_id))
            for start in range(0, len(ids), _CHUNK):
                found = source.get_vectors(user_id, ids[start : start + _CHUNK])
                if found:
                    keys = list(found)
                    target.upsert(user_id, keys, np.vstack([found[k] for k in keys]).astype(np.float32))
                    copied += len(keys)
                if progress is not None:
                    progress(copied, total)
    except ConfigError:  # another embedder made them: nothing to copy, the repair embeds anew
        log.warning("the vectors in %s have another length than the embedder's; re-embedding", old)
        target.drop_all()
        copied = 0
    finally:
        source.close()
        target.close()
    shutil.rmtree(new, ignore_errors=True)  # not a shard (no edge_config.json): a create cut short
    os.replace(partial, new)
    shutil.rmtree(old)
    return copied
