"""Alternative node implementations to compare the built-in ones with (``tianma experiment``).

Each is an entry point of ``tianma.nodes`` and fills a slot by setting, e.g.
``TIANMA_NODES__RERANK=rerank_mmr``:

- ``retrieve_dense`` / ``retrieve_keyword``: one retrieval channel alone (the e5 vectors, or
  BM25 with the fact table) — the baselines hybrid retrieval is measured against;
- ``rerank_mmr``: the built-in scores, then maximal marginal relevance over the memories' vectors
  (:data:`MMR_LAMBDA`): five memories that say five things rather than one thing five times;
- ``redline_noop``: no check at all, the reply passes through — only to measure what the
  redline check costs; never for real use.
"""

from __future__ import annotations

import numpy as np
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.nodes.rerank import record_used
from tianma.nodes.retrieve import find_candidates
from tianma.policies.scoring import rerank as rank_candidates
from tianma.storage.records import ScoredMemory, candidate_from_dict, scored_to_dict
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span

MMR_LAMBDA = 0.7
"""Weight of a memory's own score against its greatest similarity to one already chosen."""


def retrieve_dense(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Candidates from the dense channel alone."""
    return find_candidates(state, runtime, frozenset({"dense"}))


def retrieve_keyword(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Candidates from the keyword channel (and the fact table) alone."""
    return find_candidates(state, runtime, frozenset({"keyword"}))


def mmr(scored: list[ScoredMemory], vectors: dict[str, np.ndarray], keep: int, weight: float = MMR_LAMBDA) -> list[ScoredMemory]:
    """Greedy maximal marginal relevance: each next memory maximises ``weight × score −
    (1 − weight) × its greatest cosine to one chosen`` (scores scaled to the best one; a memory
    without a vector competes on its score alone)."""
    if not scored:
        return []
    top = max(m.score for m in scored) or 1.0
    chosen: list[ScoredMemory] = []
    left = list(scored)
    while left and len(chosen) < keep:

        def value(m: ScoredMemory) -> float:
            v = vectors.get(m.id)
            near = max((float(v @ vectors[c.id]) for c in chosen if v is not None and c.id in vectors), default=0.0)
            return weight * m.score / top - (1 - weight) * near

        best = max(left, key=value)
        chosen.append(best)
        left.remove(best)
    return chosen


def rerank_mmr(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """The built-in rerank's scores, then :func:`mmr` picks the memories that go forward."""
    deps = runtime.context
    candidates = [candidate_from_dict(c) for c in state.get("candidates", [])]
    keep = min(deps.rerank_policy.max_kept, 5)
    scored = rank_candidates(candidates, state["at"], deps.rerank_policy, limit=len(candidates))
    vectors = deps.memory.vectors.get_vectors(state["user_id"], [m.id for m in scored]) if scored else {}
    kept = mmr(scored, vectors, keep)
    record_used(deps, state, kept, len(candidates))
    return {"memories": [scored_to_dict(m) for m in kept]}


def redline_noop(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """No redline check: the reply joins the window as the model wrote it."""
    reply = state.get("reply")
    current_span().set_attribute(sc.TIANMA_REDLINE_VERDICT, "pass")
    update: TurnUpdate = {"redline": {"verdict": "pass", "rules": [], "notes": ["redline_noop: not checked"]},
                          "reply": reply}  # fmt: skip
    if reply is not None:
        update["messages"] = [AIMessage(reply)]
    return update
