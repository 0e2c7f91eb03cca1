"""generate: identity + memory block + summary + window, then one call to the chat model."""

from __future__ import annotations

from langgraph.runtime import Runtime

from tianma.errors import ChatModelUnavailableError
from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.llm.chat import call_chat
from tianma.prompting import build_messages
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import current_span


def generate(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Ask the chat model; a failure is recorded in state, not raised, so the turn is kept."""
    deps = runtime.context
    messages, items = build_messages(
        state.get("messages", []),
        state.get("memories", []),
        state.get("preferences", []),
        state.get("strategies", []),
        state.get("summary"),
        deps.settings.retrieval.max_prompt_items,
        deps.constitution.identity,
    )
    current_span().set_attribute(sc.TIANMA_PROMPT_ITEMS, items)
    try:
        result = call_chat(
            deps.chat_model,
            messages,
            base_url=deps.settings.ollama.base_url,
            timeout_s=deps.settings.ollama.timeout_s,
            capture_content=deps.settings.telemetry.capture_content,
        )
    except ChatModelUnavailableError as exc:
        return {"reply": None, "error": str(exc), "prompt_items": items}
    return {
        "reply": result.text,
        "error": None,
        "prompt_items": items,
        "usage": {"input": result.input_tokens, "output": result.output_tokens},
    }
