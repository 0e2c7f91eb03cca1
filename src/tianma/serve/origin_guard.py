"""No cross-site writes: any web page the user opens could otherwise POST into their memory.

Like Ollama's ``OLLAMA_ORIGINS`` (and its Host check):

* a request whose ``Origin`` is neither this server itself nor one of ``serve.allowed_origins``
  is refused (403) on every route — also a page on another port of this machine: a browser
  sends ``Origin`` on every cross-site POST, also on a no-cors ``text/plain`` one. Chat clients
  that are servers (Open WebUI's backend, the Python clients) send no ``Origin``;
* on a loopback-bound server the ``Host`` must be a loopback name or one of
  ``serve.allowed_hosts`` (403 otherwise): a DNS-rebinding page reaches 127.0.0.1 under its
  own name;
* a browser's POST to the API (``/api``, ``/v1``, ``/tianma``) must be ``application/json``
  (415): a form or ``text/plain`` body is what a page can send without asking. Clients that
  are not browsers (no ``Origin``, no ``Sec-Fetch-Site``) are not asked, so ``curl -d`` works as
  with Ollama.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tianma.serve.auth import is_loopback
from tianma.serve.error_handlers import api_of, error_body

API_PREFIXES = ("/api/", "/v1/", "/tianma/")


def _host_name(host: str) -> str:
    """``example.com:8080`` → ``example.com``; ``[::1]:11435`` → ``::1``."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class OriginGuard:
    """ASGI middleware enforcing the rules of the module docstring."""

    def __init__(self, app: ASGIApp, *, bind_host: str, allowed_origins: Sequence[str] = (),
                 allowed_hosts: Sequence[str] = ()) -> None:  # fmt: skip
        self.app = app
        self.loopback_bound = is_loopback(bind_host)
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.hosts = {h.lower() for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        problem = self._problem(scope, headers)
        if problem is not None:
            status, message = problem
            body = error_body(api_of(str(scope.get("path", ""))), status, message)  # the API's own error shape
            return await JSONResponse(body, status_code=status)(scope, receive, send)
        return await self.app(scope, receive, send)

    def _problem(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if self.loopback_bound and not (is_loopback(_host_name(host)) or _host_name(host).lower() in self.hosts):
            return 403, f"host {host!r} not allowed (serve.allowed_hosts) / 不允许的主机名"
        origin = headers.get("origin")
        if origin is not None and not self._origin_ok(origin, host):
            return 403, f"origin {origin!r} not allowed (serve.allowed_origins) / 不允许跨站请求"
        browser = origin is not None or "sec-fetch-site" in headers
        path = str(scope.get("path", ""))
        if browser and scope.get("method") == "POST" and path.startswith(API_PREFIXES):
            ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if ctype != "application/json":
                return 415, "a browser's API request must be application/json / 请以 JSON 发送"
        return None

    def _origin_ok(self, origin: str, host: str) -> bool:
        origin = origin.rstrip("/").lower()
        if origin in self.origins or "*" in self.origins:
            return True
        parts = urlsplit(origin)
        return bool(parts.netloc) and parts.netloc == host.lower()  # this server's own pages (the UI)
