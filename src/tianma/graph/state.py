"""Typed state of the turn graph (checkpointed per dialogue: plain data only)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class TurnState(TypedDict, total=False):
    """What the six nodes read and write; ``messages`` is the short-term window."""

    user_id: str
    dialogue_id: str
    experiment: str
    """The online experiment serving this turn ("" outside one)."""
    arm: str
    """Its arm ("" outside an experiment)."""
    message: str
    """The user's message of this turn."""
    at: datetime
    """When the turn happens (real or simulated time)."""
    messages: Annotated[list[AnyMessage], add_messages]
    """The last turns verbatim (the window); older ones are folded into ``summary``."""
    summary: dict[str, str]
    """Rolling summary of folded turns: topic, user_view, decision, open_items, emotion."""
    summary_turns: int
    """Folded turns the current summary covers (it is rewritten from scratch at 20)."""
    domain: str
    """Inferred domain of the request."""
    strategies: list[dict[str, Any]]
    """Applied strategies: id, content, explored, priority, weight."""
    preferences: list[dict[str, Any]]
    """Resident in the prompt: learnt preferences that still hold and the user's current
    statements — id, kind, content, confidence, source_event_ids (statements also at, until)."""
    exploration: dict[str, Any]
    """ε-greedy this turn: explored, skipped (the top strategy), alternative, epsilon."""
    conflicts: list[dict[str, Any]]
    """Equal-priority opposite strategies disabled for this turn: a, b, reason."""
    message_vector: list[float]
    """Embedding of this turn's message (cleared at the end of the turn)."""
    passage_vector: list[float]
    """The message embedded as a passage, to store the event (cleared at the end of the turn)."""
    candidates: list[dict[str, Any]]
    """Retrieved candidates: record fields plus relevance and channels."""
    memories: list[dict[str, Any]]
    """Injected memories after rerank (at most 5)."""
    reply: str | None
    error: str | None
    """Why the chat model did not answer, if it did not."""
    stopped: bool
    """The client stopped the reply mid-way; ``reply`` is what it had been shown."""
    redline: dict[str, Any]
    """Verdict of the redline check: verdict, rules, note."""
    event_id: str
    signals: list[dict[str, Any]]
    """Implicit signals detected this turn."""
    reflection_due: str | None
    """Why a reflection should run now (``negative``, ``messages``, ``dialogues``), if it should."""
    prompt_items: int
    usage: dict[str, int]
    """Tokens the chat model reported: input, output."""


TurnUpdate = dict[str, Any]
"""What a node returns: only the keys it changes."""
