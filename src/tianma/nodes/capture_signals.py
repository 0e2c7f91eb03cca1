"""capture_signals: record the event, what was injected, implicit signals; fold the window."""

from __future__ import annotations

import numpy as np
from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.memory.records import NewEvent
from tianma.memory.shortterm import fold_window
from tianma.memory.tokenize import token_set
from tianma.policies.signals import DetectedSignal, detect_repeat, detect_rephrase
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span


def implicit_signals(state: TurnState) -> list[DetectedSignal]:
    """Rephrase of the previous message; a question already asked in another dialogue."""
    humans = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)]
    found = []
    if len(humans) >= 2:
        prev = detect_rephrase(
            token_set(state["message"]), token_set(str(humans[-2].content)), state.get("event_id")
        )
        found.append(prev)
    earlier = [
        (c["record"]["id"], c["record"]["dialogue_id"], c["relevance"])
        for c in state.get("candidates", [])
        if c["record"]["kind"] == "event" and c["record"]["role"] == "user"
    ]
    found.append(detect_repeat(state["message"], earlier, state["dialogue_id"]))
    return [s for s in found if s is not None]


def capture_signals(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Write the turn's event (even when the model failed) and the signals it reveals."""
    deps, at, user_id = runtime.context, state["at"], state["user_id"]
    event = NewEvent(
        user_id=user_id,
        role="user",
        text=state["message"],
        at=at,
        dialogue_id=state["dialogue_id"],
        reply=state.get("reply"),
        error=state.get("error"),
    )
    reuse = getattr(deps.memory.embedder, "symmetric", False) and state.get("message_vector")
    vectors = np.asarray([state["message_vector"]], dtype=np.float32) if reuse else None
    (stored,) = deps.memory.record_events([event], vectors)
    injected = [
        *(
            {"record_id": m["id"], "role": "memory", "rank": i, "score": m["score"]}
            for i, m in enumerate(state.get("memories", []))
        ),
        *(
            {
                "record_id": s["id"],
                "role": "strategy",
                "rank": i,
                "score": float(s["weight"]),
                "explored": int(bool(s["explored"])),
            }
            for i, s in enumerate(state.get("strategies", []))
        ),
        *(
            {"record_id": p["id"], "role": "preference", "rank": i, "score": p["confidence"]}
            for i, p in enumerate(state.get("preferences", []))
        ),
    ]
    deps.memory.store.add_injections(stored.id, user_id, injected)
    signals = implicit_signals(state)
    for sig in signals:
        deps.memory.add_signal(
            user_id,
            sig.type,
            sig.confidence,
            target_event_id=sig.target_event_id,
            source_event_id=stored.id,
            dialogue_id=state["dialogue_id"],
            at=at,
            detail=sig.detail,
        )
    window = deps.settings.window
    removals, summary, folded = fold_window(
        state.get("messages", []), state.get("summary"), window.turns, window.fold
    )
    span = current_span()
    span.set_attribute(sc.TIANMA_EVENT_ID, stored.id)
    span.set_attribute(sc.TIANMA_SIGNALS, [f"{s.type}:{s.target_event_id}" for s in signals])
    span.set_attribute(sc.TIANMA_WINDOW_FOLDED, folded)
    update: TurnUpdate = {
        "event_id": stored.id,
        "candidates": [],
        "signals": [
            {"type": s.type, "target_event_id": s.target_event_id, "confidence": s.confidence}
            for s in signals
        ],
    }
    if folded:
        update["messages"], update["summary"] = removals, summary
    return update
