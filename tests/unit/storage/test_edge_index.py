"""The Edge shard as a process holds it: one process at a time, told what to do; what was
written before a ``kill -9`` is there after, whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

from tianma.errors import BackendUnavailableError
from tianma.storage.edge_index import EdgeVectorIndex

DIM = 8


def test_a_held_shard_is_refused_with_what_to_do_and_freed_on_close(tmp_path: Path) -> None:
    first = EdgeVectorIndex(tmp_path / "vectors", DIM)
    with pytest.raises(BackendUnavailableError, match="in use by another tianma process: stop it first"):
        EdgeVectorIndex(tmp_path / "vectors", DIM)
    first.close()
    first.close()  # a second close does nothing
    EdgeVectorIndex(tmp_path / "vectors", DIM).close()


def test_another_process_is_refused_too(tmp_path: Path) -> None:
    held = EdgeVectorIndex(tmp_path / "vectors", DIM)
    try:
        code = (
            "from pathlib import Path; from tianma.storage.edge_index import EdgeVectorIndex; "
            f"EdgeVectorIndex(Path({str(tmp_path / 'vectors')!r}), {DIM})"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and "in use by another tianma process" in done.stderr
    finally:
        held.close()


WRITER = textwrap.dedent(
    """
    import sys, uuid
    from pathlib import Path
    import numpy as np
    from tianma.storage.edge_index import EdgeVectorIndex
    index = EdgeVectorIndex(Path(sys.argv[1]), 8)
    rng = np.random.default_rng(0)
    n = 0
    while True:
        rows = rng.standard_normal((200, 8)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        index.upsert("u", [str(uuid.uuid4()) for _ in range(200)], rows)
        n += 200
        print(n, flush=True)
    """
)


def test_killed_mid_write_the_shard_opens_with_whole_batches(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    acknowledged = 0
    while acknowledged < 2000:
        acknowledged = int(writer.stdout.readline())
    writer.kill()  # SIGKILL: no flush, no close
    writer.wait(timeout=30)
    writer.stdout.close()
    index = EdgeVectorIndex(folder, DIM)
    try:
        count = index.count("u")
        assert count >= acknowledged and count % 200 == 0  # every acknowledged batch, no half batch
        assert len(index.ids("u")) == count
        probe = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
        assert len(index.search("u", probe, 5)) == 5
        index.upsert("u", [str(uuid.uuid4())], probe[None, :])
        assert index.count("u") == count + 1
    finally:
        index.close()
