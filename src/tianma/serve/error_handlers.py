"""Every error a request meets, as the API it came through reports one.

* ``/api/*`` and ``/`` (Ollama's API): ``{"error": "..."}`` (plus Ollama's ``hint`` where
  tianma has one: a model Ollama lacks); mid-stream, an NDJSON line ``{"error": "..."}``.
* ``/v1/*`` (OpenAI's): ``{"error": {"message", "type", "param", "code"}}``, ``type``
  ``invalid_request_error`` for a 4xx and ``api_error`` for a 5xx; mid-stream, an SSE event
  carrying that object.
* ``/tianma/*``: ``{"error": "..."}``; anything else (the review UI): plain text.

:func:`exception_handlers` registers the mapping with Starlette: a :class:`~tianma.errors.RequestError`
answers with its own status, other tianma errors by :data:`STATUS`, a Starlette ``HTTPException``
(no such route, wrong method) with its status, and any other exception with 500 (logged).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from tianma.errors import (
    BackendUnavailableError,
    ClientGoneError,
    ConfigError,
    GuardrailBlockedError,
    HomeInUseError,
    InvalidInputError,
    ModelNotFoundError,
    RecordNotFoundError,
    RequestError,
    TianmaError,
    UnauthorizedError,
)
from tianma.serve.bodies import printable
from tianma.serve.upstream import UpstreamError

logger = logging.getLogger("tianma.serve")

Api = Literal["ollama", "openai", "tianma", "plain"]

STATUS: tuple[tuple[type[TianmaError], int], ...] = (
    (RecordNotFoundError, 404),
    (InvalidInputError, 400),
    (ConfigError, 400),
    (HomeInUseError, 409),
    (GuardrailBlockedError, 403),
    (BackendUnavailableError, 503),
    (TianmaError, 500),
)
"""Status of a tianma error that is not a :class:`RequestError`, first match wins."""


def api_of(path: str) -> Api:
    """Whose error shape a request's path takes."""
    if path == "/v1" or path.startswith("/v1/"):
        return "openai"
    if path == "/" or path == "/api" or path.startswith("/api/"):
        return "ollama"
    if path.startswith("/tianma/"):
        return "tianma"
    return "plain"


def status_of(exc: BaseException) -> int:
    """The HTTP status an exception answers with."""
    if isinstance(exc, RequestError | UpstreamError):
        return exc.status
    if isinstance(exc, HTTPException):
        return exc.status_code
    if isinstance(exc, TianmaError):
        return next(status for cls, status in STATUS if isinstance(exc, cls))
    return 500


def message_of(exc: BaseException) -> str:
    """What the error body says."""
    if isinstance(exc, UnauthorizedError):
        return f"unauthorized: {exc}"
    if isinstance(exc, UpstreamError):
        return exc.error
    if isinstance(exc, HTTPException):
        return str(exc.detail)
    if isinstance(exc, TianmaError) and str(exc):
        return str(exc)
    return f"tianma failed: {type(exc).__name__}: {exc}" if str(exc) else f"tianma failed: {type(exc).__name__}"


def error_body(api: Api, status: int, message: str, *, param: str | None = None, code: str | None = None,
               hint: str = "") -> dict[str, Any]:  # fmt: skip
    """The body of an error in ``api``'s shape (``plain`` gets the Ollama shape)."""
    if api == "openai":
        kind = "invalid_request_error" if status < 500 else "api_error"
        text = f"{message} ({hint})" if hint else message
        return {"error": {"message": text, "type": kind, "param": param, "code": code}}
    return {"error": message, "hint": hint} if hint else {"error": message}


def body_of(api: Api, exc: BaseException) -> dict[str, Any]:
    """The error body of ``exc`` in ``api``'s shape (text it quotes that is not valid Unicode, a
    lone surrogate, written out as ``\\udXXX``: the body must be UTF-8)."""
    param = exc.param if isinstance(exc, RequestError) else None
    code = exc.code if isinstance(exc, RequestError) else None
    hint = exc.hint if isinstance(exc, UpstreamError | ModelNotFoundError) else ""
    return error_body(api, status_of(exc), printable(message_of(exc)), code=code, hint=printable(hint),
                      param=None if param is None else printable(param))  # fmt: skip


def error_response(path: str, exc: BaseException) -> Response:
    """The answer to a request to ``path`` that failed with ``exc``."""
    status = status_of(exc)
    if isinstance(exc, ClientGoneError):
        return Response(status_code=status)  # nobody reads it: the client closed the connection
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None
    api = api_of(path)
    if api == "plain":
        return PlainTextResponse(printable(message_of(exc)), status_code=status, headers=headers)
    return JSONResponse(body_of(api, exc), status_code=status, headers=headers)


def stream_error(api: Api, exc: BaseException) -> bytes:
    """The chunk that ends a stream already under way when ``exc`` cuts it: Ollama's NDJSON error
    line, or OpenAI's SSE error event."""
    body = body_of(api, exc)
    if api == "openai":
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()
    return json.dumps(body, ensure_ascii=False).encode() + b"\n"


async def handle(request: Request, exc: Exception) -> Response:
    """Starlette's exception handler for every exception (see the module docstring)."""
    if status_of(exc) >= 500 and isinstance(exc, TianmaError) and not isinstance(exc, RequestError):
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(request.url.path, exc)


Handler = Callable[[Request, Exception], Awaitable[Response]]


def exception_handlers() -> Mapping[Any, Handler]:
    """For ``Starlette(exception_handlers=...)``: tianma's errors and Starlette's ``HTTPException``
    are answered where they happen; any other exception by the outermost middleware, which then
    re-raises it so the server logs its traceback."""
    return {TianmaError: handle, HTTPException: handle, Exception: handle}
