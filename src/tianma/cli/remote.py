"""The CLI's side of the admin API: find the ``tianma serve`` holding a home, run operations in it.

Like ``ollama list`` and its daemon: :func:`find_server` reads ``<home>/serve.json`` and answers
the server only if its process is alive and it answers a ping, with its token, for this very
home; anything else (no file, a dead pid, no answer, another home, a token it refuses) means no
server, and the CLI opens the home itself.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

import httpx

from tianma.errors import BackendUnavailableError
from tianma.operations.operation import Operation, decode_error
from tianma.serve import serve_file
from tianma.serve.serve_file import ADMIN_PATH, TOKEN_HEADER, ServeInfo
from tianma.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")

PING_TIMEOUT_S = 3.0
CALL_TIMEOUT = httpx.Timeout(connect=5.0, read=None, write=30.0, pool=5.0)
"""An operation may wait for the model (``reflect``, ``chat``): no read timeout."""


def _client(
    info: ServeInfo, timeout: httpx.Timeout | float, transport: httpx.BaseTransport | None
) -> httpx.Client:
    # trust_env=False: the token goes to this machine only, never through an HTTP(S)_PROXY
    return httpx.Client(base_url=info.url, headers={TOKEN_HEADER: info.token}, timeout=timeout,
                        trust_env=False, transport=transport)  # fmt: skip


def find_server(settings: Settings, transport: httpx.BaseTransport | None = None) -> ServeInfo | None:
    """The live server of ``settings.home``, or None (the command then runs directly)."""
    home = settings.home.expanduser()
    info = serve_file.read(home)
    if info is None or not serve_file.is_alive(info.pid):
        return None
    try:
        with _client(info, PING_TIMEOUT_S, transport) as client:
            answer = client.get(ADMIN_PATH)
        served = answer.json().get("home") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(served, str) or Path(served) != home.resolve():
        return None
    return info


class RemoteConnection:
    """Runs operations in the server of :attr:`server` (``POST /tianma/admin/ops/<name>``)."""

    def __init__(self, server: ServeInfo, transport: httpx.BaseTransport | None = None) -> None:
        self.server: ServeInfo | None = server
        self._url = server.url
        self._client = _client(server, CALL_TIMEOUT, transport)

    def call(self, op: Operation[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Run ``op`` in the server and return its result.

        Raises:
            TianmaError: the operation's own error, as the server raised it (same class and message).
            BackendUnavailableError: the server went away.
        """
        try:
            answer = self._client.post(
                f"{ADMIN_PATH}/ops/{op.name}", json={"args": op.encode_args(*args, **kwargs)}
            )
            body: Any = answer.json()
        except httpx.HTTPError as exc:
            raise BackendUnavailableError(
                f"lost tianma serve at {self._url} ({type(exc).__name__}); run the command again "
                "(it opens the home itself when no server runs) / 与 tianma serve 的连接中断，请重试"
            ) from exc
        except ValueError as exc:
            raise BackendUnavailableError(
                f"tianma serve at {self._url} answered {answer.status_code} without JSON"
            ) from exc
        if answer.status_code != 200 or not isinstance(body, dict) or "result" not in body:
            raise decode_error(body.get("error") if isinstance(body, dict) else body)
        return op.decode_result(body["result"])

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemoteConnection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
