"""A lasting statement keeps the vectors it is compared by (one per subject model); one without
them gets the one it is compared by once."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import RuntimeFactory
from tianma.memory import subject_model
from tianma.memory.statements import compared_by, cue_of, fill_subject_vectors
from tianma.memory.subject_model import MODELS, REVISION, SUBJECT, subject_embedder
from tianma.memory.subject_vectors import (
    FIELD,
    FIELDS,
    MAX_CLAUSES,
    Clause,
    Subject,
    about,
    decoded,
    encoded,
    models,
)
from tianma.storage.protocols import Embedder
from tianma.storage.records import MemoryRecord, Provenance

D0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_lasting_statement_keeps_its_query_vector_and_a_mood_keeps_none(make_runtime: RuntimeFactory,
                                                                          e5: Embedder) -> None:  # fmt: skip
    rt = make_runtime()
    wish = rt.chat("u", "以后回答我的问题请先给结论，再讲细节。", dialogue_id="d0", at=D0)
    mood = rt.chat("u", "今天好累，心情很差。", dialogue_id="d0", at=D0 + timedelta(minutes=1))
    for model in MODELS:  # one vector per subject model, each its own
        kept = decoded(e5, rt.memory.store.get(wish.event_id), model)
        assert kept is not None
        assert float(kept.vector @ subject_embedder(e5, model).embed_query("以后回答我的问题请先给结论，再讲细节。")) > 0.999
    assert not set(FIELDS.values()) & set(rt.memory.store.get(mood.event_id).data)


def test_a_statement_of_several_clauses_keeps_those_naming_a_facet(make_runtime: RuntimeFactory, e5: Embedder) -> None:
    rt = make_runtime()
    text = "give me headers and bold text, i'm reading your answers in obsidian now and they render nicely"
    kept = decoded(e5, rt.memory.store.get(rt.chat("u", text, dialogue_id="d0", at=D0).event_id))
    assert kept is not None
    assert [c.facets for c in kept.clauses] == [frozenset({"format"})]
    assert float(kept.clauses[0].vector @ subject_embedder(e5).embed_query("give me headers and bold text")) > 0.999
    single = decoded(e5, rt.memory.store.get(rt.chat("u", "Use metric units from now on.", dialogue_id="d0",
                                                     at=D0 + timedelta(minutes=1)).event_id))  # fmt: skip
    assert single is not None and single.clauses == ()  # one clause: the whole is the clause


def test_a_wall_of_wishes_embeds_a_bounded_number_of_clauses(e5: Embedder) -> None:
    wall = "; ".join(f"no markdown in answer {i}" for i in range(200))
    assert len(about(e5, wall).clauses) == MAX_CLAUSES


def test_a_statement_without_one_gets_it_when_first_compared(make_runtime: RuntimeFactory, e5: Embedder) -> None:
    rt = make_runtime()
    for user, model, correction in (("u", SUBJECT, "Fish is fine in my recipes."), ("v", REVISION, "Actually I eat fish again now.")):
        first = rt.chat(user, "I'm vegetarian, so no meat in any recipe.", dialogue_id=f"{user}0", at=D0)
        other = rt.chat(user, "From now on keep your answers short.", dialogue_id=f"{user}0", at=D0 + timedelta(minutes=1))
        field = FIELDS[model]
        rt.memory.store.put_data(user, {first.event_id: {field: None}, other.event_id: {field: {"embedder": "another"}}})
        assert decoded(e5, rt.memory.store.get(first.event_id), model) is None

        said = rt.chat(user, correction, dialogue_id=f"{user}1", at=D0 + timedelta(days=1))
        cue = cue_of(rt.memory.store.get(said.event_id))
        assert cue is not None and compared_by(cue) == model  # a revision cue: the revision model
        for event_id, text in ((first.event_id, "I'm vegetarian, so no meat in any recipe."),
                               (other.event_id, "From now on keep your answers short.")):  # fmt: skip
            kept = decoded(e5, rt.memory.store.get(event_id), model)
            assert kept is not None and float(kept.vector @ subject_embedder(e5, model).embed_query(text)) > 0.999


def test_only_the_bundled_e5_keeps_two_vectors(e5: Embedder, char_embedder: Embedder) -> None:
    assert models(e5) == MODELS and models(char_embedder) == (SUBJECT,)
    own = encoded(char_embedder, "x", Subject(np.ones(char_embedder.dim, dtype=np.float32), ()))
    record = MemoryRecord(id="r", user_id="u", kind="event", content="x", created_at=D0, updated_at=D0,
                          provenance=Provenance(), data={FIELD: own})  # fmt: skip
    assert decoded(char_embedder, record, REVISION) is not None  # its own model, whichever is asked for
    assert decoded(e5, record, REVISION) is None


def test_what_cannot_be_read_is_no_vector(e5: Embedder) -> None:
    def record(entry: object) -> MemoryRecord:
        return MemoryRecord(id="r", user_id="u", kind="event", content="x", created_at=D0, updated_at=D0,
                            provenance=Provenance(), data={FIELD: entry})  # fmt: skip

    ones = np.ones(e5.dim, dtype=np.float32)
    good = encoded(e5, "x", Subject(ones, (Clause(frozenset({"format"}), -ones),)))
    back = decoded(e5, record(good))
    assert back is not None and [c.facets for c in back.clauses] == [frozenset({"format"})]
    assert np.allclose(back.vector, 1 / np.sqrt(e5.dim), atol=1e-3)  # kept as a unit vector
    assert np.allclose(back.clauses[0].vector, -1 / np.sqrt(e5.dim), atol=1e-3)
    assert decoded(e5, record({k: v for k, v in good.items() if k != "clauses"})) is None  # kept before clauses
    assert decoded(e5, record({**good, "clauses": [{"facets": ["format"], "f16": "AAAA"}]})) is None
    assert decoded(e5, record({**good, "clauses": [{"f16": good["f16"]}]})) is None
    assert decoded(e5, record({**good, "embedder": "another"})) is None
    assert decoded(e5, record({**good, "text": "of another text"})) is None
    assert decoded(e5, record({**good, "f16": "not base64!"})) is None
    assert decoded(e5, record({**good, "f16": "AAAA"})) is None  # the wrong size
    assert decoded(e5, record("a string")) is None


def test_serve_gives_an_older_homes_statements_their_vectors_as_it_starts(make_runtime: RuntimeFactory,
                                                                          e5: Embedder) -> None:  # fmt: skip
    rt = make_runtime()
    said = [rt.chat("u", text, dialogue_id="d0", at=D0 + timedelta(minutes=i)).event_id
            for i, text in enumerate(("以后回答我的问题请先给结论，再讲细节。", "I'm vegetarian, so no meat in any recipe."))]  # fmt: skip
    rt.chat("v", "From now on keep your answers short.", dialogue_id="d1", at=D0)
    rt.memory.store.put_data("u", {i: {FIELD: None} for i in said})  # as a home recorded before they were kept
    rt.memory.store.put_data("u", {said[1]: {FIELDS[REVISION]: None}})  # and before the revision model

    assert fill_subject_vectors(rt.memory, D0 + timedelta(days=1), threading.RLock()) == 3
    assert all(decoded(e5, rt.memory.store.get(i), m) is not None for i in said for m in MODELS)
    assert fill_subject_vectors(rt.memory, D0 + timedelta(days=1), threading.RLock()) == 0  # once

    rt.memory.store.put_data("u", {said[0]: {FIELD: None}})
    rt._warm_learning()  # what the background worker runs as tianma serve starts
    assert decoded(e5, rt.memory.store.get(said[0])) is not None


def test_a_cache_that_cannot_be_written_compares_by_plain_e5_and_refuses_no_chat(
    make_runtime: RuntimeFactory, e5: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setattr(subject_model, "_cache_dirs", lambda: [tmp_path / "a-file" / "cache", tmp_path / "a-file" / "tmp"])
    monkeypatch.setattr(subject_model, "_SHARED", {})  # this process has built neither model yet
    rt = make_runtime()
    with caplog.at_level(logging.WARNING, logger="tianma.memory.subject_model"):
        wish = rt.chat("u", "From now on keep your answers short.", dialogue_id="d0", at=D0)
        rt.chat("u", "Actually, long detailed answers are fine now.", dialogue_id="d0", at=D0 + timedelta(days=1))
    assert "compared by plain e5" in caplog.text
    assert subject_embedder(e5) is e5 and subject_embedder(e5, REVISION) is e5 and models(e5) == (SUBJECT,)
    kept = rt.memory.store.get(wish.event_id)
    assert kept.data[FIELD]["embedder"] == e5.name and FIELDS[REVISION] not in kept.data
    assert kept.valid_until is not None  # the correction closed it all the same
