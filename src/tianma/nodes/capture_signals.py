"""capture_signals: record the event, what was injected, implicit signals; fold the window."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, RemoveMessage
from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.guardrails.pii import PiiMatch
from tianma.guardrails.secrets import storable
from tianma.guardrails.zones import may_stand_as_stated
from tianma.llm.summary import summarise_with_model
from tianma.memory import subject_vectors
from tianma.memory.feedback import apply_signal
from tianma.memory.reflection_store import reflection_due
from tianma.memory.shortterm import REPLACE_EVERY, fold_window
from tianma.memory.statement_model import statement_model
from tianma.memory.statements import close_superseded, statement_fields
from tianma.memory.strategy_weights import learn_weights, outcome_of
from tianma.memory.subject_vectors import Subjects
from tianma.policies.signals import (
    CONFIDENCE,
    STOPPED_CONFIDENCE,
    DetectedSignal,
    detect_repeat,
    detect_rephrase,
    detect_text_cue,
)
from tianma.settings import WindowSettings
from tianma.storage.records import NewEvent
from tianma.storage.replies import replace_reply
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span
from tianma.text.tokenize import token_set


def implicit_signals(state: TurnState) -> list[DetectedSignal]:
    """What this message says about earlier replies: a rephrase or a correction, impatience or
    praise of the previous reply; a question already asked in another dialogue. One signal per
    judged turn (the most believed)."""
    humans = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)]
    previous = state.get("event_id")
    found: list[DetectedSignal | None] = [detect_text_cue(state["message"], previous)]
    if len(humans) >= 2:
        found.append(
            detect_rephrase(token_set(state["message"]), token_set(str(humans[-2].content)), previous)
        )
    earlier = [
        (c["record"]["id"], c["record"]["dialogue_id"], c["relevance"])
        for c in state.get("candidates", [])
        if c["record"]["kind"] == "event" and c["record"]["role"] == "user"
    ]
    found.append(detect_repeat(state["message"], earlier, state["dialogue_id"]))
    best: dict[str, DetectedSignal] = {}
    for sig in found:
        if sig is not None and (
            sig.target_event_id not in best or sig.confidence > best[sig.target_event_id].confidence
        ):
            best[sig.target_event_id] = sig
    return list(best.values())


def injected_rows(state: TurnState) -> list[dict[str, Any]]:
    """What this turn put in the prompt, for crediting later signals."""
    return [
        *({"record_id": m["id"], "role": "memory", "rank": i, "score": m["score"]}
          for i, m in enumerate(state.get("memories", []))),
        *({"record_id": s["id"], "role": "strategy", "rank": i, "score": float(s["weight"]),
           "explored": int(bool(s["explored"]))} for i, s in enumerate(state.get("strategies", []))),
        *({"record_id": p["id"], "role": "preference", "rank": i, "score": p["confidence"]}
          for i, p in enumerate(state.get("preferences", []))),
    ]  # fmt: skip


def capture_signals(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Write the turn's event (even when the model failed) and the signals it reveals, holding
    the memory lock, in one transaction (its vectors from the outbox after it); then fold the short-term window into the rolling summary without it (the
    summary is a model call: another user's turn must not wait for it)."""
    deps = runtime.context
    passage = state.get("passage_vector")  # embedded by retrieve, alongside the query
    model = statement_model(deps.memory.embedder) if passage else None  # trained outside the lock
    reading = None if model is None else model.read(np.asarray(passage, dtype=np.float32))
    passing = reading is not None and reading.label == "mood"
    other = reading is not None and reading.sure_other
    lasting = reading is not None and reading.sure_statement
    leaning = reading is not None and reading.label == "statement"
    text, pii = storable(state["message"], deps.settings.guardrails.pii_redaction)
    stated = statement_fields(text, state["at"], deps.settings.zone, passing, other, lasting, leaning)
    said = Said(text, pii, stated, _subject(stated, text, state, deps))  # embedded outside the lock
    with deps.lock, deps.memory.store.tx.unit():  # the turn's writes: one transaction, all or nothing
        update = _record(state, deps, said)
    folded = _fold(state, deps)
    if folded:  # the window keeps the redacted message (set by _record) and loses the folded turns
        messages = [*update.get("messages", []), *folded.pop("messages")]
        update = {**update, **folded, "messages": messages}
    return update


def _fold(state: TurnState, deps: Deps) -> TurnUpdate:
    if deps.defer_fold:
        return {}
    return fold_update(state, deps.chat_model, deps.settings.window)


def fold_update(state: Mapping[str, Any], chat_model: BaseChatModel, window: WindowSettings) -> TurnUpdate:
    """The update that folds the window's oldest turns into the rolling summary (rewritten
    every 20 turns), or ``{}`` while the window is not full. Calls the model: never under a lock."""
    covered = state.get("summary_turns", 0)
    previous = state.get("summary") if covered < REPLACE_EVERY else None

    def summariser(turns: Any, prior: dict[str, str] | None) -> dict[str, str]:
        return summarise_with_model(chat_model, turns, prior)

    removals, summary, folded = fold_window(state.get("messages", []), previous, window.turns, window.fold, summariser)
    current_span().set_attribute(sc.TIANMA_WINDOW_FOLDED, folded)
    if not folded:
        return {}
    return {"messages": removals, "summary": summary, "summary_turns": (covered if previous is not None else 0) + folded}


def stored_reply(reply: str | None, deps: Deps) -> str | None:
    """What the event keeps of the reply: cleaned as the user's message is (a reply may repeat
    the PII of the window or of a memory)."""
    return None if reply is None else storable(reply, deps.settings.guardrails.pii_redaction)[0]


class Said(NamedTuple):
    """What the turn keeps of the message, read before the memory lock is taken."""

    text: str
    """The message without secrets (and PII, as the settings say)."""
    pii: list[PiiMatch]
    stated: dict[str, Any]
    """:func:`~tianma.memory.statements.statement_fields` of ``text``."""
    subject: Subjects | None
    """What a lasting statement is about, by each subject model (:mod:`tianma.memory.subject_vectors`)."""


def _subject(stated: dict[str, Any], text: str, state: TurnState, deps: Deps) -> Subjects | None:
    """A lasting statement's subject by the subject models (:mod:`tianma.memory.subject_model`, or
    the query vector retrieve embedded when the embedder is its own subject model and the text
    stored is the message) and the vectors of its facet clauses, embedded here, outside the lock.
    When retrieve did not run (no embedder this turn), it is embedded when first compared."""
    if not stated.get("key") or stated.get("valid_until") is not None:
        return None
    if deps.client is not None and deps.client.regenerates:  # the message was recorded before: only its reply changes
        return None
    if not state.get("passage_vector"):
        return None
    query = state.get("message_vector") if text == state["message"] else None
    return subject_vectors.about_all(deps.memory.embedder, text, None if not query else np.asarray(query, dtype=np.float32))


def _record(state: TurnState, deps: Deps, said: Said) -> TurnUpdate:
    regenerated = deps.client.regenerates if deps.client is not None else None
    if regenerated and deps.memory.store.get_many(state["user_id"], [regenerated]):  # not forgotten since
        return _record_regeneration(state, deps, regenerated)
    at, user_id = state["at"], state["user_id"]
    text, pii, stated = said.text, said.pii, said.stated
    passage = state.get("passage_vector")
    refused = may_stand_as_stated(text, deps.constitution) if stated else None
    if refused:  # kept in the log as a plain message, never resident as the user's wish
        stated = {}
    if state.get("experiment"):  # which arm served the turn: the experiment's report reads it
        stated = {**stated, "data": {**stated.get("data", {}), "experiment": {"name": state["experiment"],
                                                                           "arm": state.get("arm", "")}}}  # fmt: skip
    if stated and said.subject is not None:
        kept = subject_vectors.entry(deps.memory.embedder, text, said.subject)
        stated = {**stated, "data": {**stated.get("data", {}), **kept}}
    event = NewEvent(user_id=user_id, role="user", text=text, at=at, dialogue_id=state["dialogue_id"],
                     reply=stored_reply(state.get("reply"), deps), error=state.get("error"),
                     id=deps.client.event_id if deps.client is not None else None,
                     **stated)  # fmt: skip
    vectors = np.asarray([passage], dtype=np.float32) if passage and not pii else None
    (stored,) = deps.memory.record_events([event], vectors)
    closed = (
        close_superseded(deps.memory, stored, None if vectors is None else vectors[0], deps.anchors)
        if deps.settings.learning.close_superseded
        else []
    )
    deps.memory.store.add_injections(stored.id, user_id, injected_rows(state))
    signals = implicit_signals(state)
    if state.get("stopped"):  # the user cut this reply short (seed 000: an interruption)
        signals.append(DetectedSignal("impatience", stored.id, STOPPED_CONFIDENCE, "stopped: the user stopped the reply"))
    for sig in signals:
        record = deps.memory.add_signal(user_id, sig.type, sig.confidence, target_event_id=sig.target_event_id,
                                        source_event_id=stored.id, dialogue_id=state["dialogue_id"], at=at,
                                        detail=sig.detail)  # fmt: skip
        apply_signal(deps.memory, record, at)
    weights: dict[str, float] = {}
    judged = state.get("event_id")
    if judged:  # this message is the next move after the previous reply: its strategies learn
        types = [s.type for s in signals if s.target_event_id == judged]
        weights = learn_weights(deps.memory, judged, outcome_of(types), deps.settings.policies.learning_rate)
    due = reflection_due(deps.memory.store, user_id, state["dialogue_id"], deps.settings.learning)
    span = current_span()
    span.set_attribute(sc.TIANMA_EVENT_ID, stored.id)
    span.set_attribute(sc.TIANMA_SIGNALS, [f"{s.type}:{s.target_event_id}" for s in signals])
    span.set_attribute("tianma.statement.kind", stored.key or "")
    span.set_attribute("tianma.statement.closed", closed)
    span.set_attribute("tianma.statement.refused", refused or "")
    span.set_attribute("tianma.reflection.due", due or "")
    span.set_attribute("tianma.strategies.weights", [f"{k}:{v:.3f}" for k, v in weights.items()])
    update: TurnUpdate = {
        "event_id": stored.id, "candidates": [], "passage_vector": [], "reflection_due": due,
        "signals": [{"type": s.type, "target_event_id": s.target_event_id, "confidence": s.confidence} for s in signals],
    }  # fmt: skip
    span.set_attribute("tianma.pii.redacted", [m.kind for m in pii])
    current = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)]
    if pii and current and current[-1].id:  # the window keeps the redacted text too
        update["messages"] = [HumanMessage(text, id=current[-1].id)]
    return update


def _record_regeneration(state: TurnState, deps: Deps, event_id: str) -> TurnUpdate:
    """The client asked for another reply to ``event_id``'s message: a weak ``regenerate`` signal
    on the old reply (credited to what it injected, and to its strategies), then the event gets
    the new reply and injections; the window loses the old exchange. No new event, no statement."""
    at, user_id = state["at"], state["user_id"]
    signal = deps.memory.add_signal(user_id, "regenerate", CONFIDENCE["regenerate"], target_event_id=event_id,
                                    source_event_id=None, dialogue_id=state["dialogue_id"], at=at,
                                    detail="regenerate: the client asked for another reply")  # fmt: skip
    apply_signal(deps.memory, signal, at)
    learn_weights(deps.memory, event_id, outcome_of(["regenerate"]), deps.settings.policies.learning_rate)
    replace_reply(deps.memory.store, event_id, user_id, stored_reply(state.get("reply"), deps), state.get("error"),
                  injected_rows(state))  # fmt: skip
    span = current_span()
    span.set_attribute(sc.TIANMA_EVENT_ID, event_id)
    span.set_attribute("tianma.regenerated", event_id)
    update: TurnUpdate = {
        "event_id": event_id, "candidates": [], "passage_vector": [], "reflection_due": None,
        "signals": [{"type": "regenerate", "target_event_id": event_id, "confidence": signal.confidence}],
    }  # fmt: skip
    window = state.get("messages", [])
    humans = [i for i, m in enumerate(window) if isinstance(m, HumanMessage)]
    if len(humans) >= 2:  # [..., old message, old reply, this message, new reply]: drop the old pair
        old = window[humans[-2] : humans[-1]]
        update["messages"] = [RemoveMessage(id=m.id) for m in old if m.id]
    return update
