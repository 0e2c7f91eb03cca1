"""guard and validate: the reflection nodes between score and publish.

guard — every candidate is checked for planted instructions (in its text and in the messages it
came from) and, for behaviour (strategies, preferences), for mocking, vulgarity and
over-promising: those are rejected, with the reason kept in the review queue. The rest are
classified into a zone; the circuit breaker compares them with the constitution; failure-driven
strategies wait for enough samples; what may not apply automatically is written ``pending``
and queued for a human.

validate — when strategies are about to become active, the regression set is replayed with and
without them; if its pass rate drops, they are held for review with the scenarios that failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.runtime import Runtime

from tianma.graph.reflection import ReflectionDeps, ReflectionState
from tianma.guardrails.breaker import Trip
from tianma.guardrails.content_filter import check_candidate
from tianma.guardrails.injection import detect_injection
from tianma.guardrails.regression import gate
from tianma.guardrails.replay import renderer
from tianma.guardrails.zones import classify, mode_for
from tianma.memory.reviews import open_review_ids, preview
from tianma.policies.credit import NEGATIVE
from tianma.policies.domains import infer_domain
from tianma.policies.strategies import redline_rules
from tianma.storage.records import MemoryRecord, Provenance, record_from_dict
from tianma.telemetry.spans import current_span

BEHAVIOUR = frozenset({"strategy", "preference"})


def _scope(p: dict[str, Any]) -> str:
    """A strategy triggered by domains applies to that scene; otherwise its own scope."""
    domains = (p.get("trigger") or {}).get("domains") or []
    if p["kind"] == "strategy" and p.get("scope", "global") == "global" and domains:
        return f"domain:{domains[0]}"
    return str(p.get("scope", "global"))


def guard(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """Reject, hold or queue what may not be applied automatically; pass the rest."""
    deps = runtime.context
    texts = {e["id"]: e["text"] for e in state.get("events", [])}
    existing = {r["id"]: r for r in state.get("existing", [])}
    reviewed = open_review_ids(deps.memory.store, state["user_id"])
    plan = [dict(i) for i in state.get("plan", [])]
    candidates = [i for i in plan if i.get("proposal") and i["action"] in ("create", "support")]
    behaviour = [i for i in candidates if i["proposal"]["kind"] in BEHAVIOUR]
    trips = dict(zip((id(i) for i in behaviour),
                     deps.breaker.check([i["proposal"]["content"] for i in behaviour]), strict=True))  # fmt: skip
    negatives = (
        _negative_signals(deps, state["user_id"])
        if any(i["proposal"]["kind"] == "strategy" for i in candidates)
        else []
    )
    failures = Failures(
        {e for s in negatives for e in s.provenance.event_ids},
        _failure_samples(deps, state["user_id"], negatives),
    )
    counts: dict[str, int] = {}
    for item in candidates:
        p = item["proposal"]
        p["scope"] = _scope(p)
        outcome = _judge(item, texts, existing, reviewed, trips.get(id(item)), failures, deps)
        item["guard"] = outcome
        counts[outcome["outcome"]] = counts.get(outcome["outcome"], 0) + 1
        if outcome["outcome"] in ("queued", "held"):
            item["status"] = "pending"
        if p["kind"] == "strategy":
            item["zone"] = outcome["zone"]
    span = current_span()
    for name, n in counts.items():
        span.set_attribute(f"tianma.guard.{name}", n)
    return {"plan": plan, "llm": {**state.get("llm", {}), "guard": counts}}


def _judge(
    item: dict[str, Any], texts: dict[str, str], existing: dict[str, dict[str, Any]], reviewed: dict[str, str],
    trip: Trip | None, failures: Failures, deps: ReflectionDeps,
) -> dict[str, Any]:  # fmt: skip
    p = item["proposal"]
    kind, content = p["kind"], p["content"]
    for text in (content, *(texts.get(e, "") for e in p["source_event_ids"])):
        verdict = detect_injection(text)
        if verdict.is_attack:
            return {"outcome": "rejected", "zone": "forbidden", "mode": "rejected",
                    "reason": f"planted instruction ({', '.join(verdict.reasons)}): {verdict.evidence}"}  # fmt: skip
    if kind in BEHAVIOUR:
        filtered = check_candidate(content)
        if filtered.rejected:
            return {"outcome": "rejected", "zone": "forbidden", "mode": "rejected",
                    "reason": f"content filter ({filtered.reason}): {filtered.evidence}"}  # fmt: skip
    zone, term = classify(content, deps.constitution)
    mode = mode_for(kind, zone, p["scope"])
    reasons = [f"{zone} zone" + (f" (mentions “{term}”)" if term else "")] if mode != "auto" else []
    if trip is not None:
        mode = "manual"
        reasons.append(f"circuit breaker: {trip.similarity:.2f} to constitution clause {trip.clause_id}")
    target = item.get("target_id")
    if target in reviewed:  # already waiting for a human: stays pending, no second review
        return {"outcome": "held", "zone": zone, "mode": mode, "reason": "already in the review queue"}
    if kind == "strategy" and item.get("status") == "active":
        error_type = _error_type(p)
        needed = deps.settings.guardrails.failure_batch
        have = failures.samples.get(error_type, 0)
        if failures.events & set(p["source_event_ids"]) and have < needed:
            return {"outcome": "held", "zone": zone, "mode": mode,
                    "reason": f"failure-driven: {have} of {needed} samples of {error_type} errors"}  # fmt: skip
    becomes_active = item.get("status") == "active" and (
        target is None or existing.get(target, {}).get("status") != "active"
    )
    if mode != "auto" and (becomes_active or zone == "forbidden" or trip is not None):
        return {"outcome": "queued", "zone": zone, "mode": mode, "reason": "; ".join(reasons),
                "preview": preview(p, existing.values())}  # fmt: skip
    return {"outcome": "passed", "zone": zone, "mode": mode, "reason": ""}


def _error_type(p: dict[str, Any]) -> str:
    domains = (p.get("trigger") or {}).get("domains") or []
    return str(domains[0]) if domains else "general"


@dataclass(frozen=True, slots=True)
class Failures:
    """What failure batching needs: the messages involved in negative signals, and how many
    samples of each error type the user has given."""

    events: set[str]
    """Events a negative signal judged or came from: a strategy citing one is failure-driven."""
    samples: dict[str, int]


def _negative_signals(deps: ReflectionDeps, user_id: str) -> list[MemoryRecord]:
    return [s for s in deps.memory.store.list_records(user_id, "signal") if s.data.get("type") in NEGATIVE]


def _failure_samples(deps: ReflectionDeps, user_id: str, signals: list[MemoryRecord]) -> dict[str, int]:
    """Negative signals of the user by error type (the domain of the turn they judged)."""
    targets = deps.memory.store.get_many(user_id, [str(s.data.get("target_event_id")) for s in signals])
    out: dict[str, int] = {}
    for s in signals:
        event = targets.get(str(s.data.get("target_event_id")))
        if event is not None:
            domain = infer_domain(event.content)
            out[domain] = out.get(domain, 0) + 1
    return out


def validate(state: ReflectionState, runtime: Runtime[ReflectionDeps]) -> dict[str, Any]:
    """Replay the regression set with the strategies about to become active; hold them if it drops."""
    deps = runtime.context
    plan = [dict(i) for i in state.get("plan", [])]
    existing = [record_from_dict(r) for r in state.get("existing", [])]
    active = {r.id: r for r in existing if r.kind == "strategy" and r.status == "active"}
    activating = [
        i for i in plan
        if i.get("proposal") and i["proposal"]["kind"] == "strategy" and i.get("status") == "active"
        and i["action"] in ("create", "support") and i.get("target_id") not in active
    ]  # fmt: skip
    if not activating or not deps.settings.guardrails.regression_gate:
        return {}
    removed = {i["target_id"] for i in plan if i["action"] in ("supersede", "disable") and i.get("target_id")}
    baseline = list(active.values())
    candidate = [r for rid, r in active.items() if rid not in removed]
    candidate += [_as_strategy(n, i["proposal"], state) for n, i in enumerate(activating)]
    redlines = redline_rules(baseline)
    report = gate(deps.scenarios(), renderer(baseline, deps.constitution, redlines, deps.settings),
                  renderer(candidate, deps.constitution, redlines, deps.settings))  # fmt: skip
    span = current_span()
    span.set_attribute("tianma.regression.baseline_rate", report.baseline_rate)
    span.set_attribute("tianma.regression.candidate_rate", report.candidate_rate)
    span.set_attribute("tianma.regression.newly_failed", list(report.newly_failed))
    if not report.passed:
        for item in activating:
            item["status"] = "pending"
            item["guard"] = {**item.get("guard", {}), "outcome": "queued", "mode": "manual",
                             "reason": f"regression gate: {report.summary()}",
                             "preview": item.get("guard", {}).get("preview") or {"before": [], "after": [item["proposal"]["content"]]}}  # fmt: skip
    return {"plan": plan, "llm": {**state.get("llm", {}), "regression": report.to_dict()}}


def _as_strategy(n: int, p: dict[str, Any], state: ReflectionState) -> MemoryRecord:
    """A candidate as the active strategy record it would become (for the replay only)."""
    return MemoryRecord(
        id=f"candidate-{n}", user_id=state["user_id"], kind="strategy", content=p["content"],
        created_at=state["at"], updated_at=state["at"], provenance=Provenance(source="candidate"),
        scope=p.get("scope", "global"), status="active",
        data={"trigger": p.get("trigger") or {}, "priority": p.get("priority", 0)},
    )  # fmt: skip
