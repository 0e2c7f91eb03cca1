"""A reply that goes on after its turn: the client's “continue” and the answer after a tool call.

Both arrive as requests whose last message is not the user's: “continue” ends with the
assistant's unfinished reply, a tool round with the assistant's tool calls and the tools'
results. Ollama answers them (passed through unchanged); when the messages before those
trailing ones are exactly the request of a turn this server answered, the answer belongs to
that turn — its event's reply becomes the whole reply — and the dialogue goes on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tianma.serve.turns import ChatRequest

from tianma.serve.context import ServeContext
from tianma.serve.http import MAX_CAPTURE


@dataclass(frozen=True, slots=True)
class Continuation:
    """The turn an answer continues and what the client already has of its reply."""

    user_id: str
    event_id: str
    dialogue_id: str
    messages: tuple[dict[str, Any], ...]
    before: str
    """The reply so far: the unfinished reply a “continue” sends, or the replies of a tool round."""


def continuation_of(ctx: ServeContext, user_id: str, messages: Sequence[dict[str, Any]]) -> Continuation | None:
    """The turn ``messages`` continue, or None (no known turn, or the last message is the user's)."""
    cut = len(messages)
    while cut > 0 and messages[cut - 1].get("role") != "user":
        cut -= 1
    if cut == 0 or cut == len(messages):
        return None
    turn = ctx.dialogues.continues(user_id, messages[:cut])
    if turn is None:
        return None
    said = [str(m.get("content") or "") for m in messages[cut:] if m.get("role") == "assistant"]
    return Continuation(user_id, turn[0], turn[1], tuple(messages), "\n\n".join(s for s in said if s.strip()))


def answer_text(raw: bytes) -> str:
    """The assistant's text in a passed-through answer: Ollama's NDJSON or JSON, or OpenAI's SSE or JSON."""
    text: list[str] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        if not line or line == "[DONE]":
            continue
        try:
            chunk = json.loads(line)
        except ValueError:
            continue
        if not isinstance(chunk, dict):
            continue
        message = chunk.get("message")
        if isinstance(message, dict):  # Ollama
            text.append(str(message.get("content") or ""))
        for choice in chunk.get("choices") or []:  # OpenAI
            if isinstance(choice, dict):
                part = choice.get("delta") or choice.get("message") or {}
                text.append(str(part.get("content") or "") if isinstance(part, dict) else "")
    return "".join(text)


async def record(ctx: ServeContext, continuation: Continuation, raw: bytes, complete: bool) -> None:
    """Give the continued turn its whole reply and let the dialogue go on from it."""
    added = answer_text(raw) if complete and len(raw) <= MAX_CAPTURE else ""  # longer: not recorded
    if not added.strip():
        return
    messages = list(continuation.messages)
    if messages[-1].get("role") == "assistant":  # “continue”: the unfinished reply grows
        reply, history = continuation.before + added, [*messages[:-1], {"role": "assistant", "content": continuation.before + added}]
    else:  # after a tool round: the answer follows the tools' results
        reply = "\n\n".join(x for x in (continuation.before, added) if x.strip())
        history = [*messages, {"role": "assistant", "content": added}]
    ctx.dialogues.remember(continuation.user_id, history, continuation.dialogue_id)
    await asyncio.to_thread(ctx.runtime.replace_reply, continuation.user_id, continuation.event_id, reply)


def continuing(ctx: ServeContext, request: ChatRequest) -> Callable[[bytes, bool], Awaitable[None]] | None:
    """What to do with a passed-through answer: record it as the continued turn's reply, when the
    request continues one (a background task never does)."""
    if request.is_background(ctx.runtime.settings.serve.task_prefixes):
        return None
    found = continuation_of(ctx, request.user_id, request.messages)
    if found is None:
        return None

    async def on_answer(raw: bytes, complete: bool) -> None:
        await record(ctx, found, raw, complete)

    return on_answer
