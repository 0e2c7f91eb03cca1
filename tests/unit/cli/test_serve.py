"""Issue #14: ``tianma serve``'s port — a bad one is a usage error, one in use is one line before
anything loads, and the address is announced only once the port accepts connections."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from typer.testing import CliRunner

from tianma.cli.app import app
from tianma.cli.serve import _AnnouncingServer, bind_listener
from tianma.errors import ConfigError

runner = CliRunner(env={"COLUMNS": "200", "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"})


@pytest.mark.parametrize("port", ["80000", "65536", "-1", "abc"])
def test_a_port_that_is_not_one_is_a_usage_error(tmp_path: Path, port: str) -> None:
    home = tmp_path / "home"
    done = runner.invoke(app, ["serve", "--port", port, "--no-jobs", "--home", str(home)])
    assert done.exit_code == 2, (done.output, done.exception)
    assert "Invalid value for '--port'" in done.output
    assert not home.exists()  # refused before anything was opened


@pytest.fixture
def taken() -> Iterator[int]:
    """A port someone else listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield int(other.getsockname()[1])


def test_a_port_in_use_is_one_line_before_the_runtime_loads(tmp_path: Path, taken: int) -> None:
    home = tmp_path / "home"
    done = runner.invoke(app, ["serve", "--port", str(taken), "--no-jobs", "--home", str(home)])
    assert isinstance(done.exception, ConfigError), (done.output, done.exception)
    assert f"port {taken} on 127.0.0.1 is already in use" in str(done.exception)
    assert "--port" in str(done.exception) and "端口" in str(done.exception)
    assert "tianma serve on" not in done.output
    assert not (home / "tianma.db").exists() and not (home / "serve.json").exists()


def test_an_address_that_cannot_be_bound(taken: int) -> None:
    with pytest.raises(ConfigError, match=r"cannot listen on 192\.0\.2\.1"):  # TEST-NET-1: not this machine's
        bind_listener("192.0.2.1", taken)
    with pytest.raises(ConfigError, match="not a port"):
        bind_listener("127.0.0.1", 70000)


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def test_the_address_is_announced_once_the_port_accepts_connections() -> None:
    listener = bind_listener("127.0.0.1", 0)
    port = int(listener.getsockname()[1])
    seen: list[tuple[int, bool]] = []

    def on_listening(actual: int) -> None:
        try:
            socket.create_connection(("127.0.0.1", actual), timeout=5).close()
            seen.append((actual, True))
        except OSError:
            seen.append((actual, False))
        server.should_exit = True

    config = uvicorn.Config(_hello, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = _AnnouncingServer(config, on_listening, lambda: None)
    with listener:
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
        thread.start()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert seen == [(port, True)]
