"""The admin API the CLI uses beside a running server: ``/tianma/admin``.

``tianma memory list`` and every other command talk to the ``tianma serve`` that holds their
data home through here, the way ``ollama list`` talks to its daemon (the embedded vector index
admits one process per folder). Each call runs one named operation
(:data:`tianma.operations.OPERATIONS`) against the server's runtime and returns its result as
JSON; the CLI renders it with the same code as when it opens the home itself.

Who may call: only a process on this machine (a loopback peer, or one whose address is the
address it connected to: a connection from another host cannot have the server's own address
as its source) holding this run's admin token from ``<home>/serve.json`` (0600), sent in
``X-Tianma-Admin-Token`` and compared in constant time. Users' and admins' API keys do not
open it. Like every route it sits behind the origin guard: no browser page can call it.

- ``GET /tianma/admin`` — ping: ``{"home", "pid", "operations"}``.
- ``POST /tianma/admin/ops/<name>`` ``{"args": {...}}`` — ``{"result": ...}``, or
  ``{"error": {"type", "message"}}`` (the error's class in :mod:`tianma.errors`).
"""

from __future__ import annotations

import hmac
import logging
import os
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tianma.errors import BadRequestError, ConfigError, TianmaError
from tianma.operations import OPERATIONS
from tianma.operations.homes import ServedHome
from tianma.operations.operation import encode_error
from tianma.serve.auth import is_loopback
from tianma.serve.context import context_of
from tianma.serve.error_handlers import status_of
from tianma.serve.http import json_body
from tianma.serve.serve_file import ADMIN_PATH, TOKEN_HEADER

logger = logging.getLogger("tianma.serve.admin")

def is_local_peer(peer: str | None, own: str | None) -> bool:
    """Whether a connection comes from this machine: a loopback peer, or a peer whose address is
    the server's own address on that connection (the kernel routes that over loopback; a remote
    host cannot complete a TCP handshake with our own address as its source)."""
    if not peer:
        return False
    return is_loopback(peer) or (own is not None and peer == own)


class AdminApi:
    """The admin routes of one server run, keyed by its token."""

    def __init__(self, token: str) -> None:
        if len(token) < 16:
            raise ConfigError("the admin token must be at least 16 characters")
        self._token = token.encode()

    def _refused(self, request: Request) -> Response | None:
        server = request.scope.get("server")
        own = str(server[0]) if server else None
        if not is_local_peer(request.client.host if request.client else None, own):
            return JSONResponse(
                {"error": "the admin API answers this machine only / 仅限本机"}, status_code=403
            )
        sent = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(sent.encode(), self._token):
            return JSONResponse({"error": "missing or wrong admin token / 管理令牌错误"}, status_code=401)
        return None

    async def ping(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        settings = context_of(request).runtime.settings
        return JSONResponse({"home": str(settings.home.expanduser().resolve()), "pid": os.getpid(),
                             "operations": sorted(OPERATIONS)})  # fmt: skip

    async def run(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        name = request.path_params["name"]
        op = OPERATIONS.get(name)
        if op is None:
            return JSONResponse({"error": {"type": "InvalidInputError", "message": f"no operation {name!r}"}},
                                status_code=404)  # fmt: skip
        try:
            body = await json_body(request)
        except BadRequestError as exc:  # the CLI reads this shape (its error's class and message)
            return JSONResponse(
                {"error": {"type": "InvalidInputError", "message": str(exc)}}, status_code=exc.status
            )
        home = ServedHome(context_of(request).runtime)

        def work() -> Any:
            return op.encode_result(op(home, **op.decode_args(body.get("args", {}))))

        try:
            result = await run_in_threadpool(work)
        except TianmaError as exc:
            return JSONResponse({"error": encode_error(exc)}, status_code=status_of(exc))
        except Exception as exc:  # a bug: logged here, one line for the CLI
            logger.exception("admin operation %s failed", name)
            return JSONResponse({"error": {"type": "TianmaError", "message": f"the server failed: "
                                           f"{type(exc).__name__}: {exc}"}}, status_code=500)  # fmt: skip
        return JSONResponse({"result": result})

    def routes(self) -> list[BaseRoute]:
        return [
            Route(ADMIN_PATH, self.ping, methods=["GET"]),
            Route(f"{ADMIN_PATH}/ops/{{name}}", self.run, methods=["POST"]),
        ]
