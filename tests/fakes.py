"""Deterministic stand-ins for the parts that cannot be real in tests."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langchain_core.messages import BaseMessage

from tianma.llm.scripted import ScriptedChatModel
from tianma.storage.protocols import Matrix, Vector
from tianma.storage.records import MemoryRecord, Provenance, Status

__all__ = ["CharacterEmbedder", "ScriptedChatModel", "is_reflection_prompt", "learning_model"]


class CharacterEmbedder:
    """Hashed character uni/bi-gram counts, L2-normalised: real vector search, repeatable, fast."""

    name = "character-ngrams"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0
        self.embedded: list[str] = []
        """Every text it was asked to embed, in order."""

    def _one(self, text: str) -> Vector:
        vec = np.zeros(self.dim, dtype=np.float32)
        lowered = text.lower()
        grams = list(lowered) + [lowered[i : i + 2] for i in range(len(lowered) - 1)]
        for gram in grams:
            if gram.strip():
                digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=4).digest()
                vec[int.from_bytes(digest, "little") % self.dim] += 1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_query(self, text: str) -> Vector:
        self.calls += 1
        self.embedded.append(text)
        return self._one(text)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self.calls += 1
        self.embedded.extend(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self._one(t) for t in texts])


def is_reflection_prompt(messages: Sequence[BaseMessage]) -> bool:
    """Whether a prompt is tianma's reflection prompt (not a chat turn)."""
    return "recent messages" in str(messages[-1].content)


def learning_model(
    reflection_reply: str | Callable[[str], str], chat_reply: str = "好的。"
) -> ScriptedChatModel:
    """Chat turns get ``chat_reply``; reflection prompts get ``reflection_reply`` (or its result
    for the prompt text)."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        if not is_reflection_prompt(messages):
            return chat_reply
        prompt = str(messages[-1].content)
        return reflection_reply(prompt) if callable(reflection_reply) else reflection_reply

    return ScriptedChatModel(responder=respond)


def strategy_record(
    id: str,
    content: str,
    *,
    scope: str = "global",
    status: Status = "active",
    data: dict[str, Any] | None = None,
) -> MemoryRecord:
    """A strategy record built in memory (for pure policy tests)."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return MemoryRecord(id=id, user_id="u1", kind="strategy", content=content, created_at=at, updated_at=at,
                        provenance=Provenance(source="user"), scope=scope, status=status, data=data or {})  # fmt: skip
