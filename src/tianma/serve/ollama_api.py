"""Ollama's HTTP API: ``/api/chat`` runs a tianma turn; everything else goes to Ollama as is."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from tianma.serve.bodies import validated
from tianma.serve.context import context_of
from tianma.serve.continuations import continuing
from tianma.serve.error_handlers import stream_error
from tianma.serve.http import authenticate, json_body, now_go, pass_through, turn_headers
from tianma.serve.schemas import OllamaChat, check_images, check_model, check_turn_size
from tianma.serve.turns import FORWARDED, ChatRequest, Item, TurnDone, chat_request, first_item, passed_on

logger = logging.getLogger("tianma.serve")


async def root(request: Request) -> Response:
    """What ``ollama serve`` answers on ``/`` (clients probe it)."""
    return PlainTextResponse("Ollama is running", headers={"X-Tianma": "proxy"})


async def api(request: Request) -> Response:
    """Any ``/api/*`` endpoint but chat: Ollama answers it."""
    authenticate(request)
    return await pass_through(request, request.url.path)


async def chat(request: Request) -> Response:
    """``POST /api/chat``: a tianma turn (streaming NDJSON by default, or one JSON object).

    Errors (a bad body, no key, a model Ollama lacks, a full wait line …) are raised and answered in Ollama's shape
    by :mod:`tianma.serve.error_handlers`; the body is checked whole before the turn starts.
    """
    ctx = context_of(request)
    serve = ctx.runtime.settings.serve
    principal = authenticate(request)
    body = await json_body(request)
    parsed = validated(OllamaChat, body)
    check_model(parsed.model)
    check_images(parsed)
    messages = body.get("messages") or []
    req = chat_request(principal, parsed.model, messages, body, dict(request.headers), ctx.dialogues, serve,
                       {k: body[k] for k in FORWARDED if k in body}, parsed.stream is not False)  # fmt: skip
    if not req.is_turn(serve.task_prefixes):  # a model load, a tool round, “continue”
        return await pass_through(request, "/api/chat", await passed_on(req, body, serve.task_prefixes),
                                  continuing(ctx, req))
    check_turn_size(req, serve)
    await ctx.models.check(req.model)  # a model Ollama lacks: its 404 now, before the turn records anything
    items = ctx.turns.run(req)
    first = await first_item(request, items)
    headers = turn_headers(req.event_id, req.dialogue_id)
    if isinstance(first, TurnDone):
        if first.error is not None:
            return JSONResponse(first.error.body(), status_code=first.error.status, headers=headers)
        if not req.stream:
            return JSONResponse(_final(req, first, first.reply), headers=headers)
    return StreamingResponse(_ndjson(req, first, items), media_type="application/x-ndjson", headers=headers)


async def _ndjson(req: ChatRequest, first: Item, rest: AsyncIterator[Item]) -> AsyncIterator[bytes]:
    try:
        async for item in _chain(first, rest):
            if isinstance(item, str):
                yield _line(_chunk(req, item))
                continue
            if item.error is not None:  # mid-stream, as Ollama reports it
                yield _line({"error": item.error.error})
                return
            if item.tail:
                yield _line(_chunk(req, item.tail))
            yield _line(_final(req, item, ""))
    except Exception as exc:  # the turn failed after its first piece: end the stream the way Ollama does
        logger.exception("turn %s failed mid-stream", req.event_id)
        yield stream_error("ollama", exc)


async def _chain(first: Item, rest: AsyncIterator[Item]) -> AsyncIterator[Item]:
    yield first
    if not isinstance(first, TurnDone):
        async for item in rest:
            yield item


def _chunk(req: ChatRequest, text: str) -> dict[str, Any]:
    return {"model": req.model, "created_at": now_go(), "message": {"role": "assistant", "content": text},
            "done": False}  # fmt: skip


def _final(req: ChatRequest, done: TurnDone, text: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if done.upstream.tool_calls:
        message["tool_calls"] = done.upstream.tool_calls
    if done.upstream.thinking:
        message["thinking"] = done.upstream.thinking
    final = {k: v for k, v in done.upstream.final.items() if k not in ("model", "created_at", "done")}
    return {
        "model": req.model, "created_at": now_go(), "message": message, "done": True,
        "done_reason": final.pop("done_reason", "stop"), **final,
        "tianma": {"event_id": done.event_id, "dialogue_id": done.dialogue_id},
    }  # fmt: skip


def _line(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n"


def routes() -> list[BaseRoute]:
    return [
        Route("/", root, methods=["GET", "HEAD"]),
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/{path:path}", api, methods=["GET", "POST", "DELETE", "HEAD", "PUT"]),
    ]
