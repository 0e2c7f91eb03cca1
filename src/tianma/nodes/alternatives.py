"""Alternative node implementations to compare the built-in ones with (``tianma experiment``).

Each is an entry point of ``tianma.nodes`` and fills a slot by setting, e.g.
``TIANMA_NODES__RERANK=rerank_mmr``:

- ``retrieve_dense`` / ``retrieve_keyword``: one retrieval channel alone (the e5 vectors, or
  BM25 with the fact table) — the baselines hybrid retrieval is measured against (the same as
  ``retrieval.channels``, which ``Runtime.search`` reads too);
- ``rerank_mmr``: the built-in scores, then maximal marginal relevance over the memories' vectors
  (:data:`MMR_DIVERSITY`): five memories that say five things rather than one thing five times
  (the same as ``retrieval.diversity = 0.3``, which ``Runtime.search`` reads too);
- ``redline_noop``: no check at all, the reply passes through — only to measure what the
  redline check costs; never for real use.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.memory.search import rank_memories
from tianma.nodes.rerank import record_used
from tianma.nodes.retrieve import find_candidates
from tianma.storage.records import candidate_from_dict, scored_to_dict
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span

MMR_DIVERSITY = 0.3
"""``rerank_mmr``'s weight of difference (:mod:`tianma.policies.diversity`; λ = 0.7 for the score)."""


def retrieve_dense(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Candidates from the dense channel alone."""
    return find_candidates(state, runtime, frozenset({"dense"}))


def retrieve_keyword(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Candidates from the keyword channel (and the fact table) alone."""
    return find_candidates(state, runtime, frozenset({"keyword"}))


def rerank_mmr(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """The built-in rerank's scores, then maximal marginal relevance picks the memories that go
    forward (``retrieval.diversity`` = :data:`MMR_DIVERSITY` as a node)."""
    deps = runtime.context
    candidates = [candidate_from_dict(c) for c in state.get("candidates", [])]
    keep = min(deps.rerank_policy.max_kept, 5)
    kept = rank_memories(deps.memory, state["user_id"], candidates, state["at"], deps.rerank_policy, keep, MMR_DIVERSITY)
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
