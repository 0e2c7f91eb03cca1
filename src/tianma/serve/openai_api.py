"""OpenAI's chat API: ``/v1/chat/completions`` runs a tianma turn; ``/v1/models`` lists Ollama's.

Requests are translated to Ollama's ``/api/chat`` form (text and image parts, tools, sampling
options, ``response_format``) and answers back to ``chat.completion`` objects or SSE chunks
ending in ``data: [DONE]``. Other ``/v1/*`` endpoints (embeddings, completions) go to
Ollama's own OpenAI layer unchanged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from tianma.serve.bodies import validated
from tianma.serve.context import context_of
from tianma.serve.continuations import continuing
from tianma.serve.error_handlers import error_body, stream_error
from tianma.serve.http import authenticate, json_body, pass_through, turn_headers
from tianma.serve.schemas import OpenAIChat, check_images, check_model, check_turn_size, data_url_payload
from tianma.serve.turns import ChatRequest, Item, TurnDone, chat_request, first_item, passed_on

logger = logging.getLogger("tianma.serve")
_OPTIONS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "stop": "stop",
            "frequency_penalty": "frequency_penalty", "presence_penalty": "presence_penalty",
            "max_tokens": "num_predict", "max_completion_tokens": "num_predict"}  # fmt: skip


def error(status: int, message: str, code: str | None = None) -> JSONResponse:
    """OpenAI's error body."""
    return JSONResponse(error_body("openai", status, message, code=code), status_code=status)


def _text_and_images(content: Any) -> tuple[str, list[str]]:
    if isinstance(content, str) or content is None:
        return content or "", []
    texts, images = [], []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            texts.append(str(part.get("text") or ""))
        elif part.get("type") == "image_url":
            image = part.get("image_url")
            url = image if isinstance(image, str) else str((image or {}).get("url") or "")
            images.append(data_url_payload(url) or url)  # check_images let only data: URLs through
    return "\n".join(texts), images


def to_ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages as Ollama's (text parts joined, data-URL images, tool calls)."""
    out = []
    for m in messages:
        text, images = _text_and_images(m.get("content"))
        role = "system" if m.get("role") == "developer" else str(m.get("role") or "user")
        item: dict[str, Any] = {"role": role, "content": text}
        if images:
            item["images"] = images
        calls = m.get("tool_calls") or []
        if calls:
            item["tool_calls"] = [
                {"function": {"name": c["function"]["name"], "arguments": _arguments(c["function"].get("arguments"))}}
                for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict)
            ]  # fmt: skip
        if m.get("tool_call_id"):
            item["tool_call_id"] = m["tool_call_id"]
        out.append(item)
    return out


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {}
    return raw or {}


def to_ollama_extra(body: dict[str, Any]) -> dict[str, Any]:
    """Sampling options, ``response_format`` and tools in Ollama's form."""
    options = {target: body[name] for name, target in _OPTIONS.items() if body.get(name) is not None}
    if isinstance(options.get("stop"), str):
        options["stop"] = [options["stop"]]
    extra: dict[str, Any] = {"options": options} if options else {}
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_object":
        extra["format"] = "json"
    elif fmt.get("type") == "json_schema":
        extra["format"] = (fmt.get("json_schema") or {}).get("schema") or "json"
    if body.get("tools"):
        extra["tools"] = body["tools"]
    return extra


async def models(request: Request) -> Response:
    """``GET /v1/models`` from Ollama's installed models."""
    ctx = context_of(request)
    authenticate(request)
    try:
        answer = await ctx.upstream.aio.get("/api/tags")
        answer.raise_for_status()
        rows = answer.json().get("models") or []
    except Exception as exc:  # unreachable or malformed: say so the OpenAI way
        return error(502, f"could not list Ollama's models at {ctx.upstream.base_url}: {exc}")
    now = int(time.time())
    data = [{"id": r.get("name") or r.get("model"), "object": "model", "created": now, "owned_by": "library"}
            for r in rows]  # fmt: skip
    return JSONResponse({"object": "list", "data": data})


async def other(request: Request) -> Response:
    """Embeddings, completions …: Ollama's OpenAI layer answers."""
    authenticate(request)
    return await pass_through(request, request.url.path)


async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``: a tianma turn (SSE when ``stream`` is true).

    Errors (a bad body, no key, a model Ollama lacks, a full wait line …) are raised and answered in OpenAI's shape
    by :mod:`tianma.serve.error_handlers`; the body is checked whole before the turn starts.
    """
    ctx = context_of(request)
    serve = ctx.runtime.settings.serve
    principal = authenticate(request)
    body = await json_body(request)
    parsed = validated(OpenAIChat, body)
    check_model(parsed.model)
    check_images(parsed)
    messages = to_ollama_messages(body["messages"])
    req = chat_request(principal, parsed.model, messages, body, dict(request.headers), ctx.dialogues, serve,
                       to_ollama_extra(body), bool(parsed.stream))  # fmt: skip
    if not req.is_turn(serve.task_prefixes):  # a tool round, “continue”: Ollama's OpenAI layer answers
        return await pass_through(request, "/v1/chat/completions", await passed_on(req, body, serve.task_prefixes),
                                  continuing(ctx, req))
    check_turn_size(req, serve)
    await ctx.models.check(req.model)  # a model Ollama lacks: its 404 now, before the turn records anything
    items = ctx.turns.run(req)
    first = await first_item(request, items)
    headers = turn_headers(req.event_id, req.dialogue_id)
    completion = f"chatcmpl-{req.event_id[:8]}"
    if isinstance(first, TurnDone):
        if first.error is not None:
            return error(first.error.status, first.error.error + (f" ({first.error.hint})" if first.error.hint else ""))
        if not req.stream:
            return JSONResponse(_completion(completion, req, first), headers=headers)
    include_usage = bool(parsed.stream_options and parsed.stream_options.include_usage)
    return StreamingResponse(_sse(completion, req, first, items, include_usage),
                             media_type="text/event-stream", headers=headers)  # fmt: skip


def _finish_reason(done: TurnDone) -> str:
    if done.upstream.tool_calls:
        return "tool_calls"
    return "length" if done.upstream.final.get("done_reason") == "length" else "stop"


def _tool_calls(done: TurnDone) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{i}_{done.event_id[:8]}", "index": i, "type": "function",
         "function": {"name": c.get("function", {}).get("name"),
                      "arguments": json.dumps(c.get("function", {}).get("arguments") or {}, ensure_ascii=False)}}
        for i, c in enumerate(done.upstream.tool_calls)
    ]  # fmt: skip


def _usage(done: TurnDone) -> dict[str, int]:
    prompt = int(done.upstream.final.get("prompt_eval_count") or 0)
    completion = int(done.upstream.final.get("eval_count") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tianma(done: TurnDone) -> dict[str, str]:
    return {"event_id": done.event_id, "dialogue_id": done.dialogue_id}


def _completion(cid: str, req: ChatRequest, done: TurnDone) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": done.reply}
    if done.upstream.tool_calls:
        message["tool_calls"] = _tool_calls(done)
    return {
        "id": cid, "object": "chat.completion", "created": int(time.time()), "model": req.model,
        "system_fingerprint": "fp_tianma",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(done)}],
        "usage": _usage(done), "tianma": _tianma(done),
    }  # fmt: skip


def _chunk(cid: str, req: ChatRequest, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": req.model,
            "system_fingerprint": "fp_tianma",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


async def _sse(cid: str, req: ChatRequest, first: Item, rest: AsyncIterator[Item],
               include_usage: bool) -> AsyncIterator[bytes]:  # fmt: skip
    try:
        async for piece in _events(cid, req, first, rest, include_usage):
            yield piece
    except Exception as exc:  # the turn failed after its first piece: end the stream with OpenAI's error event
        logger.exception("turn %s failed mid-stream", req.event_id)
        yield stream_error("openai", exc)


def _event(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


async def _events(cid: str, req: ChatRequest, first: Item, rest: AsyncIterator[Item],
                  include_usage: bool) -> AsyncIterator[bytes]:  # fmt: skip
    yield _event(_chunk(cid, req, {"role": "assistant", "content": ""}, None))
    pending: list[Item] = [first]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield _event(_chunk(cid, req, {"content": item}, None))
            nxt = await anext(rest, None)
            if nxt is not None:
                pending.append(nxt)
            continue
        if item.error is not None:
            yield _event({"error": {"message": item.error.error, "type": "api_error", "param": None, "code": None}})
            return
        if item.tail:
            yield _event(_chunk(cid, req, {"content": item.tail}, None))
        if item.upstream.tool_calls:
            yield _event(_chunk(cid, req, {"tool_calls": _tool_calls(item)}, None))
        final = _chunk(cid, req, {}, _finish_reason(item))
        final["tianma"] = _tianma(item)
        yield _event(final)
        if include_usage:
            yield _event({**_chunk(cid, req, {}, None), "choices": [], "usage": _usage(item)})
        yield _event("[DONE]")


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/{path:path}", other, methods=["GET", "POST"]),
    ]
