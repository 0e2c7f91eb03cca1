"""redline_check: the user's redlines and the built-in checks on every reply; the reply joins the window.

Built in: certain-return predictions get a risk note, doses without a disclaimer get one,
identity drift and dangerous instructions are replaced by a safe reply, and a reply that
repeats another user's memory is blocked (a keyword search over the other users' records).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from tianma.errors import RecordNotFoundError
from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.guardrails.redlines import full_check
from tianma.memory.service import Memory
from tianma.policies.strategies import redline_rules
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span
from tianma.text.tokenize import tokenize

LEAK_TERMS = 24
"""The reply's longest distinct tokens searched in other users' records."""
LEAK_CANDIDATES = 8


def foreign_texts(memory: Memory, user_id: str, reply: str) -> list[str]:
    """Other users' records sharing the most words with the reply (none to search when the
    store has no other user: the usual home of one person)."""
    if not memory.store.has_other_users(user_id):
        return []
    terms = sorted({w for w in tokenize(reply) if len(w) >= 2}, key=lambda w: (-len(w), w))[:LEAK_TERMS]
    hits = memory.keywords.search(user_id, terms, LEAK_CANDIDATES, others=True)
    texts = []
    for record_id, _ in hits:
        try:
            texts.append(memory.store.get(record_id).content)
        except RecordNotFoundError:  # deleted since it was indexed
            continue
    return texts


def redline_check(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Amend or replace the reply when a check fires; pass it through otherwise."""
    deps = runtime.context
    user_id = state["user_id"]
    reply = state.get("reply")
    rules = redline_rules(deps.memory.store.list_records(user_id, "strategy", "active"))
    others = foreign_texts(deps.memory, user_id, reply) if reply else []
    verdict = full_check(reply, state["message"], state.get("domain", "general"), rules, others,
                         identity=(deps.constitution.name, deps.constitution.english_name))  # fmt: skip
    span = current_span()
    span.set_attribute(sc.TIANMA_REDLINE_VERDICT, verdict.verdict)
    span.set_attribute(sc.TIANMA_REDLINE_RULES, list(verdict.rules))
    span.add_event(
        sc.GEN_AI_GUARDRAIL_EVENT,
        {
            sc.GEN_AI_GUARDRAIL_POLICY_ID: "tianma.redlines",
            sc.GEN_AI_GUARDRAIL_RESULT_TYPE: verdict.verdict,
            sc.GEN_AI_GUARDRAIL_RESULT_VALUE: ",".join(verdict.rules),
        },
    )
    update: TurnUpdate = {"redline": verdict.to_state(), "reply": verdict.reply}
    if verdict.reply is not None:
        update["messages"] = [AIMessage(verdict.reply)]
    return update
