"""How a CLI command reaches its data home: through the running ``tianma serve`` that holds it,
or directly — opening only what the command's operations need (on a read-only home, only the
SQL store, read-only, for the commands that only read: :mod:`tianma.cli.home`).

Either way a command's operations return the same data: a direct call is passed through the
same JSON codec as a call through the server, so the rendering cannot tell them apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ParamSpec, Protocol, TypeVar

from tianma.cli.app import open_runtime
from tianma.cli.home import ReadOnlyHome, home_access, read_only_error
from tianma.cli.remote import RemoteConnection, find_server
from tianma.errors import HomeInUseError
from tianma.operations.homes import DirectHome
from tianma.operations.operation import Home, Operation
from tianma.serve.serve_file import ServeInfo
from tianma.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


class Connection(Protocol):
    """Where a command's operations run."""

    server: ServeInfo | None
    """The server they run in; None when this process opened the home."""

    def call(self, op: Operation[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Run ``op`` with these arguments over the home."""
        ...


class DirectConnection:
    """Runs operations in this process over a home it opened (:class:`DirectHome`, :class:`ReadOnlyHome`)."""

    server: ServeInfo | None = None

    def __init__(self, home: Home) -> None:
        self.home = home

    def call(self, op: Operation[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        return op.decode_result(op.encode_result(op(self.home, *args, **kwargs)))


@contextmanager
def connect(settings: Settings, *, writes: bool = True) -> Iterator[Connection]:
    """The connection of one command: to the live server of ``settings.home`` if there is one,
    else to the home opened here (SQL first; the runtime only if an operation needs it).

    Args:
        settings: the home and everything else.
        writes: whether the command may write; one that only reads (``writes=False``) also works
            on a read-only home.

    Raises:
        ConfigError: the home is a file or cannot be created, or is read-only and ``writes``.
    """
    server = find_server(settings)
    if server is not None:
        with RemoteConnection(server) as remote:
            yield remote
        return
    if home_access(settings) == "read-only":
        if writes:
            raise read_only_error(settings)
        with ReadOnlyHome(settings) as read_only:
            yield DirectConnection(read_only)
        return
    with DirectHome(settings, open_runtime) as home:
        yield DirectConnection(home)


def require_no_server(settings: Settings, command: str) -> None:
    """Refuse a command that needs the home to itself while a server holds it.

    Raises:
        HomeInUseError: a live ``tianma serve`` holds ``settings.home``.
    """
    server = find_server(settings)
    if server is not None:
        raise HomeInUseError(
            f"`{command}` needs the data home to itself, and tianma serve (pid {server.pid}, {server.url}) "
            f"is running on it: stop the server first, then run it again. / tianma serve 正在使用这个数据目录"
            f"（进程 {server.pid}）：请先停止服务，再运行 `{command}`。"
        )
