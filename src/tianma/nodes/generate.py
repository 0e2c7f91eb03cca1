"""generate: identity + memory block + summary + window, then one call to the chat model.

For a chat client's turn (``Deps.client``, from ``tianma serve``) the client's own messages
are the prompt, the memory block joins its system prompt, and the reply streams back through
the check-then-release gate (``tianma.guardrails.stream_gate``).
"""

from __future__ import annotations

from collections.abc import Callable

from langgraph.runtime import Runtime

from tianma.errors import ChatModelUnavailableError
from tianma.graph.deps import Deps
from tianma.graph.state import TurnState, TurnUpdate
from tianma.guardrails.redlines import full_check
from tianma.guardrails.stream_gate import StreamGate
from tianma.llm.chat import call_chat
from tianma.nodes.redline_check import foreign_texts
from tianma.policies.strategies import redline_rules
from tianma.prompting import build_messages, client_messages
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import content_capture, current_span


def generate(state: TurnState, runtime: Runtime[Deps]) -> TurnUpdate:
    """Ask the chat model; a failure is recorded in state, not raised, so the turn is kept."""
    deps = runtime.context
    if deps.client is not None:
        return _generate_for_client(state, deps)
    messages, items = build_messages(
        state.get("messages", []),
        state.get("memories", []),
        state.get("preferences", []),
        state.get("strategies", []),
        state.get("summary"),
        deps.settings.retrieval.max_prompt_items,
        deps.constitution.identity,
        zone=deps.settings.zone,
    )
    current_span().set_attribute(sc.TIANMA_PROMPT_ITEMS, items)
    try:
        result = call_chat(
            deps.chat_model,
            messages,
            base_url=deps.settings.ollama.base_url,
            timeout_s=deps.settings.ollama.timeout_s,
            capture=content_capture(deps.settings),
        )
    except ChatModelUnavailableError as exc:
        return {"reply": None, "error": str(exc), "prompt_items": items, "stopped": False}
    return {
        "reply": result.text,
        "error": None,
        "stopped": False,
        "prompt_items": items,
        "usage": {"input": result.input_tokens, "output": result.output_tokens},
    }


def _generate_for_client(state: TurnState, deps: Deps) -> TurnUpdate:
    client = deps.client
    assert client is not None
    messages, items = client_messages(
        client.messages,
        state.get("memories", []),
        state.get("preferences", []),
        state.get("strategies", []),
        deps.settings.retrieval.max_prompt_items,
        deps.constitution.identity,
        zone=deps.settings.zone,
    )
    span = current_span()
    span.set_attribute(sc.TIANMA_PROMPT_ITEMS, items)
    gate = StreamGate(_passes(state, deps), client.release or (lambda _text: None))
    stopped = False
    pieces = client.stream(messages)
    try:
        for piece in pieces:
            if client.stopped is not None and client.stopped():
                stopped = True
                break
            if client.release is None:
                gate.text += piece
            elif not gate.feed(piece):
                break  # blocked: stop reading the model; redline_check writes the replacement
        else:
            stopped = client.stopped is not None and client.stopped()  # the call was cancelled: it just ended
            if client.release is not None and not stopped:
                gate.finish()
    except ChatModelUnavailableError as exc:
        return {"reply": gate.text or None, "error": str(exc), "prompt_items": items, "stopped": False}
    finally:  # closing the stream ends the model's answer (Ollama stops when the connection closes)
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
    span.set_attribute("tianma.stream.checks", gate.checks)
    span.set_attribute("tianma.stream.blocked", gate.blocked)
    span.set_attribute("tianma.stream.stopped", stopped)
    if stopped:  # what the user saw is what was said
        return {"reply": gate.released, "error": None, "prompt_items": items, "stopped": True}
    return {"reply": gate.text, "error": None, "prompt_items": items, "stopped": False}


def _passes(state: TurnState, deps: Deps) -> Callable[[str], bool]:
    """The check a streamed reply must pass before more of it is shown: nothing blocking from
    the user's redlines or the built-in checks (amendments are added at the end)."""
    user_id, message, domain = state["user_id"], state["message"], state.get("domain", "general")
    with deps.lock:
        rules = redline_rules(deps.memory.store.list_records(user_id, "strategy", "active"))
    identity = (deps.constitution.name, deps.constitution.english_name)

    def passes(text: str) -> bool:
        with deps.lock:
            others = foreign_texts(deps.memory, user_id, text)
        return full_check(text, message, domain, rules, others, identity=identity).verdict != "blocked"

    return passes
