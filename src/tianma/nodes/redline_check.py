"""redline_check: apply output redlines before the reply leaves; the reply joins the window."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.guardrails.redlines import check_reply
from tianma.policies.strategies import redline_rules
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span


def redline_check(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Amend or replace the reply when a redline matches; pass it through otherwise."""
    rules = redline_rules(runtime.context.memory.store.list_records(state["user_id"], "strategy", "active"))
    verdict = check_reply(state.get("reply"), state["message"], state.get("domain", "general"), rules)
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
