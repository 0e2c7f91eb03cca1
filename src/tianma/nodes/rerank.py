"""rerank: relevance × recency × confidence × importance × hits; at most 5 go forward (picked for
difference too with ``retrieval.diversity``)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.memory.search import rank_memories
from tianma.storage.records import ScoredMemory, candidate_from_dict, scored_to_dict
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span


def rerank(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Keep the best memories and count a hit for each, and for every resident item."""
    deps = runtime.context
    candidates = [candidate_from_dict(c) for c in state.get("candidates", [])]
    keep = min(deps.rerank_policy.max_kept, 5)
    kept = rank_memories(deps.memory, state["user_id"], candidates, state["at"], deps.rerank_policy, keep,
                         deps.settings.retrieval.diversity)  # fmt: skip
    record_used(deps, state, kept, len(candidates))
    return {"memories": [scored_to_dict(m) for m in kept]}


def record_used(deps: Deps, state: TurnState, kept: list[ScoredMemory], candidates: int) -> None:
    """Count a hit for what goes into the prompt, and say on the span what was kept."""
    # used means used: what sits in the prompt every turn (resident preferences and statements,
    # applied strategies) is as much a hit as a retrieved memory, so it does not fade by disuse
    used = [*(m.id for m in kept), *(p["id"] for p in state.get("preferences", [])),
            *(s["id"] for s in state.get("strategies", []))]  # fmt: skip
    deps.memory.store.record_hits(list(dict.fromkeys(used)), state["at"])
    span = current_span()
    span.set_attribute(sc.TIANMA_KEPT_IDS, [m.id for m in kept])
    span.set_attribute(sc.TIANMA_KEPT_SCORES, [m.score for m in kept])
    span.set_attribute(sc.TIANMA_DROPPED_COUNT, candidates - len(kept))
