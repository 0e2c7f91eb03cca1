"""Small pieces every endpoint module uses: JSON bodies, timestamps, auth, pass-through."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tianma.serve.auth import Principal
from tianma.serve.bodies import parse_object, read_body
from tianma.serve.context import context_of
from tianma.serve.upstream import UNREACHABLE_STATUS, unreachable_hint

EVENT_HEADER = "X-Tianma-Event-Id"
DIALOGUE_HEADER = "X-Tianma-Dialogue-Id"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
               "te", "trailer", "upgrade", "proxy-authenticate", "proxy-authorization", "host",
               "authorization", "x-api-key", "cookie"}  # fmt: skip
_NOT_FORWARDED = _HOP_BY_HOP | {"accept-encoding", "origin", "referer"}
"""Not sent to Ollama: the client's encodings (the answer is decoded here and sent on plain)."""
_NOT_RETURNED = _HOP_BY_HOP | {"date", "server"}
"""Not copied from Ollama's answer: this server writes its own ``date`` and ``server``."""
MAX_CAPTURE = 1 << 21
"""Bytes of a passed-through answer kept for ``on_answer`` (2 MiB)."""


def now_go() -> str:
    """Now as Ollama writes ``created_at`` (RFC 3339, UTC, ``Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, read within ``serve.max_body_bytes`` and checked
    (:mod:`tianma.serve.bodies`).

    Raises:
        RequestTooLargeError: more than ``serve.max_body_bytes``.
        BadRequestError: empty, not UTF-8 or JSON, not an object, too deep, a lone surrogate.
    """
    limit = context_of(request).runtime.settings.serve.max_body_bytes
    return parse_object(await read_body(request, limit))


def authenticate(request: Request) -> Principal:
    """The caller.

    Raises:
        UnauthorizedError: keys are required and the request has none, or an unknown one.
    """
    return context_of(request).auth.authenticate(request)


def turn_headers(event_id: str, dialogue_id: str) -> dict[str, str]:
    return {EVENT_HEADER: event_id, DIALOGUE_HEADER: dialogue_id}


async def pass_through(
    request: Request, path: str, body: bytes | None = None, on_answer: Callable[[bytes, bool], Awaitable[None]] | None = None
) -> Response:
    """Send the request on to Ollama unchanged and stream its answer back (no memory).

    ``on_answer``: called once the answer has been sent, with its bytes (up to ``MAX_CAPTURE``;
    more are sent but not kept) and whether it was sent whole and with status 200.
    """
    upstream = context_of(request).upstream
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
    outgoing = upstream.aio.build_request(
        request.method, path, content=body if body is not None else await request.body(),
        headers=headers, params=request.query_params,
    )  # fmt: skip
    try:
        answer = await upstream.aio.send(outgoing, stream=True)
    except httpx.TransportError as exc:
        return JSONResponse({"error": str(exc) or type(exc).__name__, "hint": unreachable_hint(upstream.base_url)},
                            status_code=UNREACHABLE_STATUS)  # fmt: skip
    kept = {k: v for k, v in answer.headers.items() if k.lower() not in _NOT_RETURNED}
    if on_answer is None:
        return StreamingResponse(answer.aiter_bytes(), status_code=answer.status_code, headers=kept,
                                 background=BackgroundTask(answer.aclose))  # fmt: skip
    seen = bytearray()
    whole = [False]

    async def tee() -> AsyncIterator[bytes]:
        async for piece in answer.aiter_bytes():
            if len(seen) <= MAX_CAPTURE:
                seen.extend(piece[: MAX_CAPTURE + 1 - len(seen)])
            yield piece
        whole[0] = answer.status_code == 200

    async def after() -> None:
        await answer.aclose()
        await on_answer(bytes(seen), whole[0])

    return StreamingResponse(tee(), status_code=answer.status_code, headers=kept, background=BackgroundTask(after))
