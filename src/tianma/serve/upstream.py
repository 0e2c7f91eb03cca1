"""The Ollama daemon behind the proxy: chat streams for turns, and raw pass-through."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from tianma.errors import ChatModelUnavailableError

UNREACHABLE_STATUS = 502


class UpstreamError(ChatModelUnavailableError):
    """Ollama answered with an error, or could not be reached.

    ``status`` and ``error`` are what Ollama said (the proxy sends them on unchanged);
    ``hint`` says what to do about it.
    """

    def __init__(self, status: int, error: str, hint: str) -> None:
        super().__init__(f"{error} ({hint})" if hint else error)
        self.status = status
        self.error = error
        self.hint = hint

    def body(self) -> dict[str, Any]:
        """Ollama's error body, plus the hint."""
        return {"error": self.error, "hint": self.hint} if self.hint else {"error": self.error}


@dataclass
class UpstreamReply:
    """What a streamed chat answer carried besides its text."""

    final: dict[str, Any] = field(default_factory=dict)
    """The ``done`` chunk: ``done_reason`` and the metrics."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    thinking: str = ""


def unreachable_hint(base_url: str) -> str:
    return f"Ollama is not reachable at {base_url}; start it (`ollama serve`) or set TIANMA_OLLAMA__BASE_URL"


def hint_for(status: int, error: str, model: str | None) -> str:
    """A clear next step for an error Ollama returned."""
    if status == 404 and "not found" in error and model:
        return f"the model is not installed in Ollama: run `ollama pull {model}` there"
    return ""


class Upstream:
    """One Ollama daemon at ``base_url``.

    Args:
        base_url: e.g. ``http://127.0.0.1:11434``.
        timeout_s: how long to wait for a model between two pieces of its answer.
    """

    def __init__(self, base_url: str, timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        timeout = httpx.Timeout(timeout_s, connect=10.0)
        self.aio = httpx.AsyncClient(base_url=self.base_url, timeout=timeout)

    async def chat_stream(self, body: dict[str, Any], reply: UpstreamReply) -> AsyncIterator[str]:
        """Stream ``/api/chat`` on the event loop (cancelling the task closes the connection, and
        Ollama stops generating); yields content pieces and fills ``reply`` with the rest.

        Raises:
            UpstreamError: an error status, an error line in the stream, or no connection.
        """
        model = str(body.get("model") or "")
        try:
            async with self.aio.stream("POST", "/api/chat", json={**body, "stream": True}) as response:
                if response.status_code != 200:
                    raise _error_of(response.status_code, await response.aread(), model)
                async for line in response.aiter_lines():
                    piece = _read_chunk(line, reply)
                    if piece:
                        yield piece
        except httpx.TransportError as exc:
            raise UpstreamError(UNREACHABLE_STATUS, str(exc) or type(exc).__name__,
                                unreachable_hint(self.base_url)) from exc  # fmt: skip
        except json.JSONDecodeError as exc:
            raise UpstreamError(502, f"Ollama sent a malformed stream: {exc}", "") from exc

    async def aclose(self) -> None:
        await self.aio.aclose()


def _read_chunk(line: str, reply: UpstreamReply) -> str:
    """One NDJSON line of a chat stream: its content piece ("" for none); the rest goes to ``reply``."""
    if not line.strip():
        return ""
    chunk = json.loads(line)
    if "error" in chunk:
        raise UpstreamError(500, str(chunk["error"]), "")
    message = chunk.get("message") or {}
    reply.tool_calls.extend(message.get("tool_calls") or [])
    reply.thinking += str(message.get("thinking") or "")
    if chunk.get("done"):
        reply.final = {k: v for k, v in chunk.items() if k != "message"}
    return str(message.get("content") or "")


def _error_of(status: int, raw: bytes, model: str) -> UpstreamError:
    try:
        error = str(json.loads(raw).get("error") or raw.decode("utf-8", "replace"))
    except (ValueError, AttributeError):
        error = raw.decode("utf-8", "replace").strip() or f"HTTP {status}"
    return UpstreamError(status, error, hint_for(status, error, model))
