"""``tianma serve``: the memory proxy for any Ollama or OpenAI client, with jobs and the review UI.

It binds its port first, before the runtime loads, so that a port in use is one line at once.
Only once uvicorn accepts connections on it does it print its address and write
``<home>/serve.json`` (its local URL, pid and this run's admin token, mode 0600), so that every
other ``tianma`` command on the same home goes through it (:mod:`tianma.cli.connection`); the
file goes away on a clean exit.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import typer
import uvicorn

from tianma.cli.app import HomeOption, app, console, open_runtime, settings_from
from tianma.cli.home import require_writable
from tianma.cli.remote import find_server
from tianma.errors import ConfigError, HomeInUseError
from tianma.serve import serve_file

MAX_PORT = 65535


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)``, made as uvicorn makes the one it shares with its
    workers (``uvicorn.Config.bind_socket``): IPv6 for an address with a colon, else IPv4, with
    ``SO_REUSEADDR`` (not on Windows, where it would let two servers share a port).

    Raises:
        ConfigError: the address cannot be bound (in use, not this machine's, no permission).
    """
    if not 0 <= port <= MAX_PORT:
        raise ConfigError(f"port {port} is not a port (0–{MAX_PORT}; 0 = any free one) / 端口无效")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        if os.name != "nt":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use (another tianma serve or program): choose another "
                f"with --port, or stop that one / 端口 {port} 已被占用，请用 --port 换一个"
            ) from exc
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc} / 无法监听该地址") from exc
    return sock


class _AnnouncingServer(uvicorn.Server):
    """uvicorn's server, calling ``on_listening(port)`` once its socket accepts connections (not
    before: a CLI that found ``serve.json`` must get an answer) and ``on_stopping()`` as soon as it
    stops accepting them (before the graceful wait for running turns)."""

    def __init__(
        self, config: uvicorn.Config, on_listening: Callable[[int], None], on_stopping: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._on_listening = on_listening
        self._on_stopping = on_stopping

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            self._on_listening(int(self.servers[0].sockets[0].getsockname()[1]))

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._on_stopping()
        await super().shutdown(sockets=sockets)


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """uvicorn shuts down gracefully on SIGTERM (``docker stop``, systemd), then raises the signal
    again: make that an ordinary exit, so the runtime closes and ``serve.json`` goes, as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@app.command()
def serve(
    host: str | None = typer.Option(None, "--host", help="Address to bind (default: serve.host, 127.0.0.1)."),
    port: int | None = typer.Option(
        None, "--port", "-p", min=0, max=MAX_PORT, help="Port (default: serve.port, 11435; 0 = any free one)."
    ),
    no_jobs: bool = typer.Option(False, "--no-jobs", help="Do not run the periodic jobs in this process."),
    home: Path | None = HomeOption,
) -> None:
    """Serve Ollama's API (and OpenAI's chat API) with memory; point your chat client here.

    把聊天客户端（Open WebUI、Chatbox……）的 Ollama 地址改成这里即可获得记忆。
    """
    from tianma.serve import create_app

    settings = settings_from(home)
    data_home = settings.home.expanduser()
    running = find_server(settings)
    if running is not None:
        raise HomeInUseError(
            f"tianma serve is already running on {data_home} (pid {running.pid}, {running.url}) / "
            f"这个数据目录已有 tianma serve 在运行（进程 {running.pid}）"
        )
    require_writable(settings)
    bind = host or settings.serve.host
    listen = settings.serve.port if port is None else port
    token = serve_file.new_token()
    listener = bind_listener(bind, listen)  # before the runtime loads: a port in use fails at once

    def announce(actual: int) -> None:
        serve_file.write(data_home, serve_file.describe(data_home, serve_file.local_url(bind, actual), token))
        console.print(
            f"tianma serve on http://{bind}:{actual} → Ollama at {settings.ollama.base_url}; "
            f"review UI: http://{bind}:{actual}/ui",
            markup=False, soft_wrap=True,
        )  # fmt: skip

    with listener, open_runtime(settings) as rt:
        application = create_app(rt, host=bind, scheduler=False if no_jobs else None, admin_token=token)
        config = uvicorn.Config(
            application, host=bind, port=listen, log_level="info", timeout_graceful_shutdown=30
        )

        def stopping() -> None:  # no new CLI calls; running model calls end now, not at their last word
            serve_file.remove(data_home, token)
            application.state.tianma.turns.stopping()

        server = _AnnouncingServer(config, announce, stopping)
        try:
            with _sigterm_exits():
                server.run(sockets=[listener])  # uvicorn listens on it; announce() runs once it does
        except KeyboardInterrupt:  # uvicorn raises the Ctrl-C it caught again once it has shut down
            pass
        finally:
            serve_file.remove(data_home, token)
    if not server.started:
        raise typer.Exit(1)
