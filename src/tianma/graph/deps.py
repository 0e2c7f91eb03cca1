"""Dependencies injected into every node through LangGraph's runtime context."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from tianma.guardrails.constitution import Constitution
from tianma.memory.search import AnchorCache
from tianma.memory.service import Memory
from tianma.policies.scoring import RerankPolicy
from tianma.settings import Settings
from tianma.turn import ClientTurn


@dataclass(frozen=True, slots=True)
class Deps:
    """Clients and policies; never in state (state is checkpointed)."""

    memory: Memory
    anchors: AnchorCache
    chat_model: BaseChatModel
    settings: Settings
    rerank_policy: RerankPolicy
    model_name: str
    """Name of the chat model, for spans and messages."""
    constitution: Constitution
    rng: random.Random
    """Exploration draws (seeded by ``policies.seed`` for reproducible runs)."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held by every node but ``generate`` while it touches memory (SQLite, the vector index):
    turns of different dialogues overlap only in their model calls."""
    client: ClientTurn | None = None
    """The chat client's own history and model call, for a turn from ``tianma serve``."""
    defer_fold: bool = False
    """Leave the rolling summary to the background worker (``Runtime.start_background_learning``):
    a reply never waits for the model to summarise the window."""
