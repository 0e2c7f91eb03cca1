"""The two kinds of :class:`~tianma.operations.operation.Home`: inside the server, and opened here."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from types import TracebackType

from tianma.runtime import Runtime
from tianma.settings import Settings
from tianma.storage.protocols import MemoryStore
from tianma.storage.sql_store import SqlMemoryStore


class ServedHome:
    """The home of a running ``tianma serve``: its runtime, already open."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    @property
    def settings(self) -> Settings:
        return self._runtime.settings

    @property
    def store(self) -> MemoryStore:
        return self._runtime.store

    def runtime(self) -> Runtime:
        return self._runtime


RuntimeFactory = Callable[[Settings], AbstractContextManager[Runtime]]


class DirectHome:
    """A home this process opens itself, as little as the operations need: the SQL store on
    first use of :attr:`store`, the whole runtime (vector index, embedder, model) only on
    :meth:`runtime` — so a read of SQL works while another process holds the vector index.

    Args:
        settings: the home and everything else.
        open_runtime: how to open the runtime (the CLI's also configures tracing).
    """

    def __init__(self, settings: Settings, open_runtime: RuntimeFactory) -> None:
        self._settings = settings
        self._open_runtime = open_runtime
        self._stack = ExitStack()
        self._store: MemoryStore | None = None
        self._runtime: Runtime | None = None

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def store(self) -> MemoryStore:
        if self._runtime is not None and self._store is None:
            return self._runtime.store
        if self._store is None:
            self._settings.home.expanduser().mkdir(parents=True, exist_ok=True)
            self._store = SqlMemoryStore.from_url(self._settings.sql_url)
            self._stack.callback(self._store.close)
        return self._store

    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = self._stack.enter_context(self._open_runtime(self._settings))
        return self._runtime

    @property
    def opened_runtime(self) -> bool:
        """Whether :meth:`runtime` was needed."""
        return self._runtime is not None

    def close(self) -> None:
        """Close what was opened (a second call does nothing)."""
        self._stack.close()

    def __enter__(self) -> DirectHome:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
