"""Peer baselines: each finds the obvious turn, keeps users apart, and embeds like tianma does."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tianma.bench import peers
from tianma.bench.systems import CachingEmbedder, Doc, System
from tianma.storage.protocols import Embedder

AT = datetime(2024, 5, 1, 12, 0)

ALICE = [
    Doc("1", "I adopted a golden retriever puppy named Max last week.", "user", AT, "s1", "Alice"),
    Doc("2", "My favourite food is sushi, especially salmon nigiri.", "user", AT, "s1", "Alice"),
    Doc("3", "I work night shifts as a nurse at the city hospital.", "assistant", AT, "s1", "Bob"),
    Doc("4", "We are planning a hiking trip to the Alps in July.", "user", AT, "s2", "Alice"),
    Doc("5", "The weather was rainy all weekend.", "assistant", AT, "s2", "Bob"),
    # The same line twice (LoCoMo repeats short turns): InMemoryStore.batch cannot take both at once.
    Doc("6", "Sounds great, see you at the bakery on Saturday!", "assistant", AT, "s2", "Bob"),
    Doc("7", "Sounds great, see you at the bakery on Saturday!", "assistant", AT, "s2", "Bob"),
]
CAROL = [
    Doc("1", "I play the violin in the city orchestra.", "user", AT, "s1", "Carol"),
    Doc("2", "My brother just bought an electric car.", "user", AT, "s1", "Carol"),
]

# User ids with a period and a space: LangGraph namespaces and mem0 entity ids reject those.
USER_A, USER_C = "conv.a", "conv c"

mem0_missing = peers.mem0_missing()
needs_mem0 = pytest.mark.skipif(mem0_missing is not None, reason=f"mem0: {mem0_missing}")


@pytest.fixture(scope="module")
def cached(e5: Embedder) -> CachingEmbedder:
    return CachingEmbedder(e5)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any socket connection (LLM, telemetry, model download) fails the test."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"network access to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture
def mem0_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Restore the variables the mem0 peer sets, and keep mem0's home in tmp_path."""
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))


def _indexed(system: System) -> Iterator[System]:
    system.add(USER_A, ALICE)
    system.add(USER_C, CAROL)
    try:
        yield system
    finally:
        system.close()


@pytest.fixture
def inmemory(cached: CachingEmbedder) -> Iterator[System]:
    yield from _indexed(peers.InMemoryStoreSystem(cached))


@pytest.fixture
def mem0(cached: CachingEmbedder, mem0_env: None, no_network: None) -> Iterator[System]:
    yield from _indexed(peers.Mem0System(cached))


def _check_ranking(system: System) -> None:
    top = system.search(USER_A, "What kind of dog does Alice have?", 3)
    assert next(iter(top[0].doc_ids)) == "1"
    assert top[0].text == "Alice: I adopted a golden retriever puppy named Max last week."
    assert next(iter(system.search(USER_A, "Where does Bob work?", 1)[0].doc_ids)) == "3"
    assert next(iter(system.search(USER_A, "Which mountains will they visit?", 1)[0].doc_ids)) == "4"


def _check_repeats_kept(system: System) -> None:
    top = system.search(USER_A, "When will they meet at the bakery?", 2)
    assert sorted(next(iter(h.doc_ids)) for h in top) == ["6", "7"]


def _check_users_apart(system: System) -> None:
    carol = system.search(USER_C, "What kind of dog does Alice have?", 10)
    assert {h.text for h in carol} <= {d.line for d in CAROL}
    assert len(carol) == len(CAROL)
    alice = system.search(USER_A, "Who plays the violin?", 10)
    assert {h.text for h in alice} <= {d.line for d in ALICE}


def test_embeddings_adapter_keeps_query_and_passage_apart(cached: CachingEmbedder) -> None:
    adapter = peers.TianmaEmbeddings(cached)
    text = ALICE[0].line
    passage, query = adapter.embed_documents([text])[0], adapter.embed_query(text)
    assert np.allclose(passage, cached.embed_passages([text])[0])
    assert np.allclose(query, cached.embed_query(text))
    assert not np.allclose(passage, query)  # e5's prefixes differ
    assert len(passage) == cached.dim


def test_inmemory_store_finds_the_matching_turn_first(inmemory: System) -> None:
    _check_ranking(inmemory)


def test_inmemory_store_keeps_users_apart(inmemory: System) -> None:
    _check_users_apart(inmemory)


def test_inmemory_store_keeps_repeated_lines(inmemory: System) -> None:
    _check_repeats_kept(inmemory)


@needs_mem0
def test_mem0_finds_the_matching_turn_first(mem0: System) -> None:
    _check_ranking(mem0)


@needs_mem0
def test_mem0_keeps_users_apart(mem0: System) -> None:
    _check_users_apart(mem0)


@needs_mem0
def test_mem0_keeps_repeated_lines(mem0: System) -> None:
    _check_repeats_kept(mem0)


@needs_mem0
def test_mem0_stores_passage_vectors(mem0: System, cached: CachingEmbedder) -> None:
    """Turns go in with e5's passage prefix (mem0's LangChain provider alone would use the query one)."""
    assert isinstance(mem0, peers.Mem0System)
    store = mem0.memory.vector_store
    points, _ = store.client.scroll(store.collection_name, limit=100, with_vectors=True, with_payload=True)
    assert len(points) == len(ALICE) + len(CAROL)
    for point in points:
        text = point.payload["data"]
        assert np.allclose(point.vector, cached.embed_passages([text])[0], atol=1e-5)


@needs_mem0
def test_mem0_has_no_usable_llm(mem0: System) -> None:
    """With infer=False mem0 must not need its LLM; if it ever did, the stand-in fails loudly."""
    assert isinstance(mem0, peers.Mem0System)
    with pytest.raises(RuntimeError, match="infer=False"):
        mem0.memory.llm.generate_response(messages=[])


def test_factories_and_status_agree(cached: CachingEmbedder) -> None:
    status = peers.peer_status()
    assert status[peers.INMEMORY_NAME].startswith("runs")
    runs_mem0 = status[peers.MEM0_NAME].startswith("runs")
    assert runs_mem0 == (mem0_missing is None)
    if not runs_mem0:
        assert "pip install mem0ai" in status[peers.MEM0_NAME]
    assert len(peers.factories(cached)) == 1 + runs_mem0


def test_mem0_skipped_with_a_reason_when_missing(
    cached: CachingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(peers, "mem0_missing", lambda: "not installed (pip install mem0ai langchain)")
    assert peers.peer_status()[peers.MEM0_NAME] == "skipped: not installed (pip install mem0ai langchain)"
    assert len(peers.factories(cached)) == 1
