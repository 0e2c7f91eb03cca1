"""The six nodes of the reflection subgraph; the decisions live in ``tianma.policies``."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta
from typing import Any

from langgraph.runtime import Runtime

from tianma.graph.reflection import ReflectionDeps, ReflectionState
from tianma.llm.reflection_schema import ReflectionResult
from tianma.llm.structured import at_low_temperature, call_structured
from tianma.memory.model_closes import checked_closes, is_lasting, standing_statements
from tianma.memory.reflection_store import (
    last_reflected_until,
    messages_since_model_call,
    publish_plan,
    validated_streaks,
    window_events,
    window_signals,
)
from tianma.memory.statements import is_current, is_paste, revised_by, source_events
from tianma.policies import reflection as planning
from tianma.policies.importance import IMPORTANCE_THRESHOLD, importance
from tianma.policies.reflection import PlanItem, Proposal
from tianma.policies.reflection_scoring import promotions, score_plan
from tianma.policies.topics import recurring_topics
from tianma.prompting import reflection_messages
from tianma.storage.records import Kind, record_from_dict, record_to_dict
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import content_capture, current_span
from tianma.text.action_facts import action_facts
from tianma.text.extract import Extracted, extract_statements

RECURRING_TOPIC_IMPORTANCE = 0.6
LEARNT_KINDS: tuple[Kind, ...] = ("fact", "preference", "experience", "strategy")


def gather(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """The user's messages since the last published reflection, and what is already learnt."""
    store = runtime.context.memory.store
    since = state["since"] if "since" in state else last_reflected_until(store, state["user_id"])
    events = window_events(store, state["user_id"], since, state["at"])
    judged = window_signals(store, state["user_id"], since)
    events = [{**e, "signals": judged.get(e["id"], [])} for e in events]
    existing = [
        r for r in store.list_records(state["user_id"], LEARNT_KINDS) if r.status in ("active", "pending")
    ]
    current_span().set_attribute("tianma.reflection.window_events", len(events))
    until = max((e["at"] for e in events), default=state["at"])
    streaks = validated_streaks(store, state["user_id"])
    sources = source_events(store, state["user_id"], existing)
    closed = {
        r.id: closers
        for r in existing
        if (closers := sorted({c for e in r.provenance.event_ids if e in sources and (c := revised_by(sources[e]))}))
    }  # fmt: skip
    lapsed = [r.id for r in existing if not is_current(r, sources, state["at"])]
    standing = standing_statements(store, state["user_id"], state["at"])  # shown when one may close another
    lasting = any(is_lasting(e) for e in events)
    standing = standing if len(standing) > 1 or (standing and lasting) else []
    return {"events": events, "existing": [record_to_dict(r) for r in existing], "until": until,
            "streaks": {r.id: streaks[r.id] for r in existing if r.id in streaks},
            "closed": closed, "lapsed": lapsed, "standing": standing}  # fmt: skip


def reflect(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """Rule-based extraction always; one LLM call (JSON, low temperature) on top — made without
    the memory lock (the window was read by ``gather``), so other users' turns do not wait for it."""
    events = state.get("events", [])
    proposals: list[Proposal] = []
    moods = unimportant = 0
    known_keys = {r.get("key") for r in state.get("existing", []) if r.get("key")}
    for ev in events:
        if (ev.get("statement") or {}).get("period"):
            moods += 1  # scoped in time (今天…, this week…): it closes itself, it is never a preference
            continue
        if is_paste(ev["text"]):
            continue  # no statement of the user's (statement_fields): nothing in it is learnt by rule
        for item in extract_statements(ev["text"]):
            if item.time_bound:
                moods += 1  # a passing mood or state of today is not a long-term memory
                continue
            weight = importance(item, recurring=item.key in known_keys)
            if weight < IMPORTANCE_THRESHOLD:
                unimportant += 1  # stays in the short-term window and the event log only
                continue
            proposals.append(Proposal(item.kind, item.content, (ev["id"],), "rules", key=item.key,
                                      polarity=item.polarity, scope=item.scope, confidence=item.confidence,
                                      importance=weight))  # fmt: skip
        for fact in action_facts(ev["text"]):  # a date/place/amount/relationship that led to an action
            as_item = Extracted(
                "fact", fact.key, fact.content, "is", "global", False, fact.confidence, fact.evidence
            )
            proposals.append(Proposal("experience", fact.content, (ev["id"],), "rules", key=fact.key,
                                      confidence=fact.confidence,
                                      importance=importance(as_item, led_to_action=True)))  # fmt: skip
    said = [(e["id"], "" if (e.get("statement") or {}).get("period") else e["text"]) for e in events]
    for topic in recurring_topics(said):  # a mood is no topic either (its turn still counts for the distance)
        is_zh = any("\u4e00" <= ch <= "\u9fff" for ch in topic.topic)
        content = (
            f"用户多次提到「{topic.topic}」" if is_zh else f"The user keeps coming back to “{topic.topic}”"
        )
        proposals.append(Proposal("experience", content, topic.event_ids, "rules", key=f"topic.{topic.topic}",
                                  importance=RECURRING_TOPIC_IMPORTANCE))  # fmt: skip
    settled = {e for p in proposals for e in p.source_event_ids}
    unsettled = [e["id"] for e in events if is_lasting(e) and e["id"] not in settled]
    llm: dict[str, Any] = {"called": False, "unsettled": len(unsettled)}
    closes: list[dict[str, Any]] = []
    every = runtime.context.settings.learning.model_every_messages
    if state.get("rules_only"):
        llm["skipped"] = "rules only (an import)"
    elif every and not unsettled:
        llm["skipped"] = "the rule pass settled every statement"
    elif every and events:
        with runtime.context.lock:
            since, attempts = messages_since_model_call(runtime.context.memory.store, state["user_id"], state["at"])
        if since < (needed := model_gap(every, attempts)):
            llm["skipped"] = f"{since} messages since the last model call ({attempts} attempts; this time {needed} are needed)"
    if events and "skipped" not in llm:
        result = call_structured(
            at_low_temperature(runtime.context.chat_model),
            reflection_messages(events, state.get("existing", []), zone=runtime.context.settings.zone,
                                standing=state.get("standing", [])),
            ReflectionResult,
            retries=ATTEMPTS - 1,
        )
        llm = {"called": True, "unsettled": len(unsettled), "attempts": result.attempts, "dropped": result.value is None,
               "error": result.error, "input_tokens": result.input_tokens, "output_tokens": result.output_tokens}  # fmt: skip
        if result.value is not None:
            window = {e["id"] for e in events}
            known = {r["id"] for r in state.get("existing", [])}
            llm_items, ignored = proposals_from_llm(result.value, window, known)
            proposals.extend(llm_items)
            closes = checked_closes(result.value.superseded_statements, state.get("standing", []), events)
            llm["ignored_items"] = ignored + len(result.value.superseded_statements) - len(closes)
    span = current_span()
    span.set_attribute("tianma.reflection.proposals", len(proposals))
    span.set_attribute("tianma.reflection.llm_dropped", bool(llm.get("dropped")))
    span.set_attribute("tianma.reflection.moods_skipped", moods)
    span.set_attribute("tianma.reflection.statements_to_close", [c["statement_id"] for c in closes])
    span.set_attribute("tianma.reflection.below_importance", unimportant)
    return {
        "proposals": [asdict(p) for p in proposals],
        "llm": {**llm, "moods_skipped": moods, "below_importance": unimportant},
        "close_statements": closes,
    }


def proposals_from_llm(
    result: ReflectionResult, window: set[str], known: set[str]
) -> tuple[list[Proposal], int]:
    """LLM items as proposals; items citing no event of the window are ignored (not grounded)."""
    out: list[Proposal] = []
    ignored = 0

    def grounded(ids: list[str]) -> tuple[str, ...]:
        return tuple(i for i in ids if i in window)

    for fact in result.new_facts:
        if src := grounded(fact.source_event_ids):
            out.append(Proposal("fact", fact.content, src, "llm", key=fact.key))
        else:
            ignored += 1
    for pref in result.revised_preferences:
        if src := grounded(pref.source_event_ids):
            replaces = pref.replaces if pref.replaces in known else None
            out.append(Proposal("preference", pref.content, src, "llm", replaces=replaces))
        else:
            ignored += 1
    for strat in result.new_strategies:
        if src := grounded(strat.source_event_ids):
            trigger = strat.trigger.model_dump(exclude_none=True)
            out.append(Proposal("strategy", strat.action, src, "llm", trigger=trigger))
        else:
            ignored += 1
    for dep in result.deprecated_memories:
        if (src := grounded(dep.source_event_ids)) and dep.memory_id in known:
            out.append(
                Proposal("experience", dep.reason, src, "llm", replaces=dep.memory_id, polarity="deprecate")
            )
        else:
            ignored += 1
    return out, ignored


ATTEMPTS = 2
"""A model call's attempts at most: the call and its one retry on broken output."""


def model_gap(every: int, attempts: int) -> int:
    """User messages that must pass before the next model call: ``every`` after a call that
    needed its retry (and before the first), half as many after one answered at once — each
    attempt costs ``every / 2`` messages, so the default 40 keeps ≤ 5 attempts per 100 messages
    and a model that answers well is asked twice as often as one that does not."""
    return every if attempts <= 0 else every * min(attempts, ATTEMPTS) // ATTEMPTS


NEIGHBOURS = 10
"""Existing records compared by meaning with each proposal: its nearest in the vector index."""


def merge_evidence_node(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """An item equal in meaning to an existing record supports it instead of duplicating it.

    Meaning is compared only with a proposal's nearest records in the user's vector index (and
    with pending ones, which are not indexed), so a reflection costs the same with 100 or 100k
    memories.
    """
    memory, user_id = runtime.context.memory, state["user_id"]
    existing = [record_from_dict(r) for r in state.get("existing", [])]
    proposals = [
        Proposal(**{**p, "source_event_ids": tuple(p["source_event_ids"])})
        for p in state.get("proposals", [])
    ]
    texts = list(dict.fromkeys(p.content for p in proposals))
    vectors = dict(zip(texts, memory.embedder.embed_passages(texts), strict=True)) if texts else {}
    by_id = {r.id: r for r in existing}
    pending = [r.id for r in existing if r.status == "pending"]
    near: dict[str, set[str]] = {}
    for text, vec in vectors.items():
        ids = [rid for rid, _ in memory.vectors.search(user_id, vec, NEIGHBOURS) if rid in by_id]
        near[text] = {by_id[rid].content for rid in [*ids, *pending]}
    cache = dict(vectors)

    def similar(a: str, b: str) -> float:
        if b not in near.get(a, ()) and a not in near.get(b, ()):
            return 0.0
        missing = [x for x in (a, b) if x not in cache]
        if missing:
            cache.update(zip(missing, memory.embedder.embed_passages(missing), strict=True))
        return float(cache[a] @ cache[b])

    def between_proposals(a: str, b: str) -> float:
        return float(cache[a] @ cache[b]) if a in vectors and b in vectors else 0.0

    statements = planning.merge_origins(
        [p for p in proposals if p.polarity != "deprecate"], between_proposals
    )
    closed = {rid: set(ids) for rid, ids in state.get("closed", {}).items()}
    plan = planning.merge_evidence(statements, existing, similar, closed)
    plan += [PlanItem("supersede", p, p.replaces, f"deprecated by reflection: {p.content}", p.source_event_ids)
             for p in proposals if p.polarity == "deprecate"]  # fmt: skip
    current_span().set_attribute(
        "tianma.reflection.merged_into", [i.target_id for i in plan if i.action == "support" and i.target_id]
    )
    return {"plan": [plan_to_dict(i) for i in plan]}


def detect_contradictions_node(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """Supersede by key and scope; disable opposite strategies of equal priority."""
    existing = [record_from_dict(r) for r in state.get("existing", [])]
    plan, found = planning.detect_contradictions([plan_from_dict(i) for i in state.get("plan", [])], existing)
    superseded = {i.target_id for i in plan if i.action == "supersede"}
    closers = state.get("closed", {})
    plan += [PlanItem("supersede", None, rid, "closed by a newer statement of the user",
                      tuple(closers.get(rid, ())), tuple(closers.get(rid, ())[-1:]))
             for rid in state.get("lapsed", []) if rid not in superseded]  # fmt: skip
    span = current_span()
    span.set_attribute("tianma.reflection.contradictions", len(found))
    for c in found:
        span.add_event(
            "tianma.reflection.contradiction",
            {"type": c["type"], "resolution": c.get("resolution", "superseded")},
        )
    return {"plan": [plan_to_dict(i) for i in plan], "llm": {**state.get("llm", {}), "contradictions": found}}


def score(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """Decide each item's status and confidence (two reflections for facts, > 0.7 for strategies …)."""
    existing = {r["id"]: record_from_dict(r) for r in state.get("existing", [])}
    zone = runtime.context.settings.zone  # "evidence on two days" and "per day" are the user's days
    days = {e["id"]: e["at"].astimezone(zone).date() for e in state.get("events", [])}
    scored = score_plan(state.get("plan", []), existing, days, state["at"], zone)
    scored += promotions(existing.values(), state.get("streaks", {}))
    span, capture = current_span(), content_capture(runtime.context.settings)
    for item in scored:
        if "status" in item:
            attrs = {"action": item["action"], "kind": item["proposal"]["kind"], "status": item["status"],
                     "confidence": float(item["confidence"]), "reason": str(item.get("decision", ""))}  # fmt: skip
            if capture is not None:
                attrs["content"] = capture(item["proposal"]["content"])
            span.add_event("tianma.reflection.decision", attrs)
    return {"plan": scored}


def publish(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """One transaction per run; every change versioned and undoable; indexes follow."""
    g = runtime.context.settings.guardrails
    until = state["at"] + timedelta(hours=g.gray_hours)
    rollout = {"share": g.gray_share, "until": until.isoformat()} if g.gray_release else None
    run_id, report = publish_plan(runtime.context.memory, state, rollout)
    span = current_span()
    span.set_attribute("tianma.reflection.run_id", run_id)
    span.set_attribute(sc.TIANMA_SIGNALS, [f"{k}:{v}" for k, v in report["counts"].items()])
    return {"run_id": run_id, "report": report}


def plan_to_dict(item: PlanItem) -> dict[str, Any]:
    return {"action": item.action, "proposal": asdict(item.proposal) if item.proposal else None,
            "target_id": item.target_id, "reason": item.reason, "evidence": list(item.evidence),
            "extra_targets": list(item.extra_targets)}  # fmt: skip


def plan_from_dict(data: dict[str, Any]) -> PlanItem:
    p = data.get("proposal")
    proposal = Proposal(**{**p, "source_event_ids": tuple(p["source_event_ids"])}) if p else None
    return PlanItem(data["action"], proposal, data.get("target_id"), data.get("reason", ""),
                    tuple(data.get("evidence", ())), tuple(data.get("extra_targets", ())))  # fmt: skip


merge_evidence = merge_evidence_node
detect_contradictions = detect_contradictions_node
