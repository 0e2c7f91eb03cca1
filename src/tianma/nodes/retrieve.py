"""retrieve: embed the message (with recent context when it is short) and run hybrid search."""

from __future__ import annotations

import numpy as np
from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.memory.embedders import embed_message
from tianma.memory.later_words import with_later_words
from tianma.memory.resident import resident_profile
from tianma.memory.search import CHANNELS, hybrid_search
from tianma.memory.statements import current_only, outdated_by_statements
from tianma.storage.records import candidate_to_dict
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import content_capture, current_span
from tianma.text.tokenize import tokenize

SHORT_MESSAGE_TOKENS = 3
"""A message with fewer tokens than this (\"那周日呢？\") is searched with the previous one."""
CONTEXT_WEIGHT = 0.5


def previous_user_text(state: TurnState) -> str | None:
    """The user's previous message in this dialogue's window, if any."""
    humans = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)]
    return str(humans[-2].content) if len(humans) >= 2 else None


def retrieve(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Find candidate memories for this turn (filter by user and status, then hybrid search)."""
    return find_candidates(state, runtime, CHANNELS[runtime.context.settings.retrieval.channels])


def find_candidates(state: TurnState, runtime: Runtime[Deps], channels: frozenset[str]) -> TurnUpdate:
    """:func:`retrieve` with the search limited to ``channels`` (:func:`~tianma.memory.search.hybrid_search`)."""
    deps = runtime.context
    message = state["message"]
    vector, passage = embed_message(deps.memory.embedder, message)
    query_parts, query_vector = [message], vector
    previous, prev_vector = previous_user_text(state), state.get("message_vector")
    if previous and prev_vector and len(tokenize(message)) < SHORT_MESSAGE_TOKENS:
        blended = vector + CONTEXT_WEIGHT * np.asarray(prev_vector, dtype=np.float32)
        query_vector = (blended / np.linalg.norm(blended)).astype(np.float32)
        query_parts = [previous, message]
    query_text = " ".join(query_parts)
    found = hybrid_search(
        deps.memory,
        deps.anchors,
        state["user_id"],
        query_text,
        query_vector,
        deps.settings.retrieval.candidates,
        deps.settings.retrieval.graph,
        channels,
    )
    store, user_id, at = deps.memory.store, state["user_id"], state["at"]
    relevance = {c.record.id: c.relevance for c in found}
    profile = resident_profile(
        deps.memory, user_id, at, state.get("preferences", []), relevance,
        deps.anchors.statement_background(), deps.settings.retrieval.max_resident,
        deps.settings.retrieval.mark_superseded,
        lambda v: float(np.asarray(v) @ query_vector),
    )
    if deps.settings.retrieval.later_words:
        profile = with_later_words(deps.memory, user_id, at, profile, relevance)
    resident = {p["id"] for p in profile}  # already in every prompt
    window_only = not state.get("summary")  # the whole dialogue is still in the window
    found = [
        c
        for c in found
        if c.record.id not in resident and not (window_only and c.record.dialogue_id == state["dialogue_id"])
    ]
    current = {r.id for r in current_only(store, user_id, [c.record for c in found], at)}
    stated = store.get_many(user_id, [p["id"] for p in profile if p["kind"] == "event"]) if profile else {}
    current -= outdated_by_statements(deps.memory, user_id, [c.record for c in found if c.record.id in current],
                                      list(stated.values()), deps.anchors.statement_background(),
                                      deps.anchors.statement_subjects())  # fmt: skip
    closed = [c.record.id for c in found if c.record.id not in current]  # never injected as current
    found = [c for c in found if c.record.id in current]
    span = current_span()
    span.set_attribute(sc.TIANMA_RETRIEVED_IDS, [c.record.id for c in found])
    span.set_attribute(sc.TIANMA_RETRIEVED_SCORES, [round(c.relevance, 4) for c in found])
    span.set_attribute("tianma.retrieved.closed", closed)
    span.set_attribute("tianma.retrieved.graph", [c.record.id for c in found if "graph" in c.channels])
    span.set_attribute(sc.TIANMA_PREFERENCES_LOADED, sorted(resident))
    if (capture := content_capture(deps.settings)) is not None:  # each message redacted as its event was
        span.set_attribute(sc.GEN_AI_MEMORY_QUERY_TEXT, " ".join(capture(part) for part in query_parts))
    return {
        "message_vector": vector.tolist(),
        "passage_vector": passage.tolist(),
        "candidates": [candidate_to_dict(c) for c in found],
        "preferences": profile,
    }
