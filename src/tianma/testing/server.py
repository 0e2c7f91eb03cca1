"""Run an ASGI app on a real socket in a background thread (uvicorn): for tests, browser tests and
``tianma bench serve``."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn


class ServerThread:
    """``with ServerThread(app) as base_url:`` serves ``app`` on a free 127.0.0.1 port."""

    def __init__(self, app: Any, startup_s: float = 20.0) -> None:
        # proto must say TCP: asyncio sets TCP_NODELAY only on such sockets, and without it every
        # response stalls ~40 ms (Nagle against delayed ACKs)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=10)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]},
                                        name="uvicorn-test", daemon=True)  # fmt: skip
        self._startup_s = startup_s

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + self._startup_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self.base_url

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
