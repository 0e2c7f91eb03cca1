"""load_strategies: infer the domain; load fitting strategies (conflicts resolved, ε-greedy
exploration, gray release) and the resident preferences."""

from __future__ import annotations

from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.policies.conflicts import resolve
from tianma.policies.domains import infer_domain
from tianma.policies.exploration import epsilon_for, explore
from tianma.policies.strategies import MAX_PREFERENCES, in_rollout, resident_preferences, select_strategies
from tianma.settings import PoliciesSettings
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span


def epsilon_of(domain: str, policies: PoliciesSettings) -> float:
    """ε for a domain: per-domain override, else high-risk / creative / default from settings."""
    return epsilon_for(domain, policies.epsilon_by_domain, policies.epsilon,
                       high_risk=policies.epsilon_high_risk, creative=policies.epsilon_creative)  # fmt: skip


def load_strategies(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Attach the strategies whose triggers fit this turn and the resident preferences."""
    deps = runtime.context
    store = deps.memory.store
    user_id = state["user_id"]
    domain = infer_domain(state["message"])
    active = store.list_records(user_id, "strategy", "active")
    fitting = select_strategies(active, domain, state["message"], state["at"], deps.settings.zone)
    fitting = [s for s in fitting if in_rollout(s, state["dialogue_id"], state["at"])]
    resolution = resolve(fitting)
    epsilon = epsilon_of(domain, deps.settings.policies)
    choice = explore(resolution.kept, epsilon, deps.rng)
    prefs = resident_preferences(
        store.list_records(user_id, "preference", "active", limit=MAX_PREFERENCES, most_confident_first=True)
    )
    span = current_span()
    span.set_attribute(sc.TIANMA_DOMAIN, domain)
    span.set_attribute(sc.TIANMA_STRATEGIES_LOADED, [s.id for s in choice.chosen])
    span.set_attribute(sc.TIANMA_PREFERENCES_LOADED, [p.id for p in prefs])
    span.set_attribute("tianma.strategies.epsilon", epsilon)
    span.set_attribute("tianma.strategies.explored", choice.explored)
    if choice.explored:
        span.set_attribute("tianma.strategies.skipped", choice.skipped_id or "")
        span.set_attribute("tianma.strategies.alternative", choice.alternative_id or "")
    for conflict in resolution.conflicts:
        span.add_event(
            "tianma.strategies.conflict", {"a": conflict.a_id, "b": conflict.b_id, "reason": conflict.reason}
        )
    return {
        "domain": domain,
        "strategies": [
            {
                "id": s.id,
                "content": s.content,
                "explored": choice.explored and s.id == choice.alternative_id,
                "priority": s.data.get("priority", 0),
                "weight": s.data.get("weight", s.confidence),
            }
            for s in choice.chosen
        ],
        "exploration": {
            "explored": choice.explored,
            "skipped": choice.skipped_id,
            "alternative": choice.alternative_id,
            "epsilon": epsilon,
        },
        "conflicts": [{"a": c.a_id, "b": c.b_id, "reason": c.reason} for c in resolution.conflicts],
        "preferences": [
            {"id": p.id, "kind": p.kind, "content": p.content, "confidence": p.confidence,
             "source_event_ids": list(p.provenance.event_ids)}
            for p in prefs
        ],
    }
