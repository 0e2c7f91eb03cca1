"""load_strategies: infer the domain; load fitting strategies and resident preferences."""

from __future__ import annotations

from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.policies.domains import infer_domain
from tianma.policies.strategies import MAX_PREFERENCES, resident_preferences, select_strategies
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span


def load_strategies(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Attach the strategies whose triggers fit this turn and the resident preferences."""
    store = runtime.context.memory.store
    user_id = state["user_id"]
    domain = infer_domain(state["message"])
    chosen = select_strategies(
        store.list_records(user_id, "strategy", "active"), domain, state["message"], state["at"]
    )
    prefs = resident_preferences(
        store.list_records(user_id, "preference", "active", limit=MAX_PREFERENCES, most_confident_first=True)
    )
    span = current_span()
    span.set_attribute(sc.TIANMA_DOMAIN, domain)
    span.set_attribute(sc.TIANMA_STRATEGIES_LOADED, [s.id for s in chosen])
    span.set_attribute(sc.TIANMA_PREFERENCES_LOADED, [p.id for p in prefs])
    return {
        "domain": domain,
        "strategies": [
            {
                "id": s.id,
                "content": s.content,
                "explored": False,
                "priority": s.data.get("priority", 0),
                "weight": s.data.get("weight", s.confidence),
            }
            for s in chosen
        ],
        "preferences": [{"id": p.id, "content": p.content, "confidence": p.confidence} for p in prefs],
    }
