"""The association graph's walk: from the best hits to records that share a thing with them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RuntimeFactory
from tianma.memory.associations import ADDED, HUB, LIFT, lifts, walk
from tianma.storage.records import Candidate, NewEvent
from tianma.storage.sql_store import SqlMemoryStore, create_sql_engine
from tianma.storage.tag_index import TagIndex

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def store() -> SqlMemoryStore:
    return SqlMemoryStore(create_sql_engine("sqlite://"))


def linked(store: SqlMemoryStore, user: str, texts: dict[str, list[str]]) -> dict[str, Candidate]:
    """Events of ``user`` with the given tags; their candidates at relevance 1."""
    events, _ = store.add_events([NewEvent(user, "user", name, T0, f"d-{user}") for name in texts])
    TagIndex(store.tx).upsert(user, [(e.id, texts[e.content]) for e in events])
    return {e.content: Candidate(e, 1.0, ("dense",)) for e in events}


def test_a_shared_tag_leads_to_the_other_record_and_rare_tags_weigh_more(store: SqlMemoryStore) -> None:
    c = linked(store, "u", {"seed": ["sweden", "necklace"], "home country": ["sweden"],
                            "grandma": ["necklace", "gift"], "unrelated": ["pottery"]})  # fmt: skip
    scores = walk(TagIndex(store.tx), "u", [c["seed"]])
    assert set(scores) == {c["home country"].record.id, c["grandma"].record.id}
    assert scores[c["home country"].record.id] == pytest.approx(0.5 * 1.0 / 2)  # seed's half, shared by two


def test_hub_tags_are_not_walked_and_other_users_are_never_reached(store: SqlMemoryStore) -> None:
    many = {f"turn {i}": ["caroline"] for i in range(HUB + 5)}
    c = linked(store, "u", {"seed": ["caroline", "adoption"], "agency": ["adoption"], **many})
    linked(store, "v", {"other user": ["adoption"]})
    scores = walk(TagIndex(store.tx), "u", [c["seed"]])
    assert set(scores) == {c["agency"].record.id}


def test_lifts_scale_to_the_best_and_stop_at_the_limit() -> None:
    scores = {f"r{i}": 1.0 / (i + 1) for i in range(ADDED + 5)}
    lifted = lifts(scores)
    assert len(lifted) == ADDED and lifted["r0"] == pytest.approx(LIFT) and lifted["r1"] == pytest.approx(LIFT / 2)
    assert lifts({}) == {}


def test_the_walk_reads_a_bounded_neighbourhood(store: SqlMemoryStore) -> None:
    """Its queries ask for the seeds' tags and at most HUB + 1 holders per tag, whatever the store."""
    many = {f"turn {i}": ["caroline"] for i in range(500)}
    c = linked(store, "u", {"seed": ["caroline"], **many})
    calls: list[int] = []
    index = TagIndex(store.tx)
    original = index.holders

    def holders(user_id: str, tags: list[str], limit: int) -> dict[str, list[str]]:
        found = original(user_id, tags, limit)
        calls.extend(len(v) for v in found.values())
        return found

    index.holders = holders  # type: ignore[method-assign]
    assert walk(index, "u", [c["seed"]]) == {}
    assert calls == [HUB + 1]


def test_a_turn_reaches_through_the_graph_what_shares_no_word_with_the_message(
    make_runtime: RuntimeFactory, spans: InMemorySpanExporter
) -> None:
    """With ``retrieval.graph`` on, a record that shares only a name with the best hit is lifted
    and listed on the retrieve span; with it off (the default), not."""
    for graph in (True, False):
        rt = make_runtime(name=f"graph-{graph}", retrieval={"graph": graph, "candidates": 5})
        rt.ingest("u", [
            {"role": "user", "text": "My grandmother Wilhelmina gave me a silver necklace.", "at": T0, "dialogue_id": "old"},
            {"role": "user", "text": "Wilhelmina grew up on a farm near Uppsala.", "at": T0, "dialogue_id": "old"},
            *({"role": "user", "text": f"Chores list number {i}: laundry, dishes, groceries.", "at": T0,
               "dialogue_id": "old"} for i in range(12)),
        ])  # fmt: skip
        farm = next(r.id for r in rt.memories("u", kind="event") if "Uppsala" in r.content)
        spans.clear()
        rt.chat("u", "Tell me about the silver necklace my grandmother gave me.", dialogue_id="q", at=T0)
        (span,) = [s for s in spans.get_finished_spans() if s.name.endswith("retrieve")]
        walked = list(span.attributes.get("tianma.retrieved.graph", ()))  # type: ignore[union-attr]
        assert (farm in walked) is graph
        record = next(r for r in rt.memories("u", kind="event") if "Uppsala" in r.content)
        assert {"wilhelmina", "uppsala", "farm"} <= set(record.tags)  # tags filled, graph on or off
