"""One SQL transaction for a whole unit of work, joined by every store call made inside it.

The store's methods each open a transaction of their own (``tx.begin()``); inside
``tx.unit()`` they all run in the unit's one transaction instead, in this thread: a turn's event,
injections, signals, credit and weights, and its keyword-index rows and vector-outbox rows
(:mod:`tianma.storage.outbox`), commit together or not at all. Work that must wait for the
commit (writing the vector index from the outbox) is registered with :meth:`Transactions.after_commit`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy import Engine
from sqlalchemy.engine import Connection


class Transactions:
    """Transactions on ``engine``, with an ambient one per thread while a unit is open."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._local = threading.local()

    def _current(self) -> Connection | None:
        return getattr(self._local, "conn", None)

    def begin(self) -> AbstractContextManager[Connection]:
        """A transaction: the open unit's, else a new one committed on exit."""
        return self._joined(self.engine.begin)

    def connect(self) -> AbstractContextManager[Connection]:
        """A connection to read with: the open unit's (it sees the unit's writes), else a new one."""
        return self._joined(self.engine.connect)

    @contextmanager
    def _joined(self, opener: Callable[[], AbstractContextManager[Connection]]) -> Iterator[Connection]:
        conn = self._current()
        if conn is not None:
            yield conn
            return
        with opener() as conn:
            yield conn

    @contextmanager
    def unit(self) -> Iterator[Connection]:
        """One transaction for everything inside (a unit inside a unit joins it); what was
        registered with :meth:`after_commit` runs once it committed, never if it rolled back."""
        current = self._current()
        if current is not None:
            yield current
            return
        after: list[Callable[[], None]] = []
        with self.engine.begin() as conn:
            self._local.conn, self._local.after = conn, after
            try:
                yield conn
            finally:
                self._local.conn, self._local.after = None, None
        for job in after:
            job()

    def after_commit(self, job: Callable[[], None]) -> None:
        """Run ``job`` when the open unit commits — now, when no unit is open."""
        pending: list[Callable[[], None]] | None = getattr(self._local, "after", None)
        if pending is None:
            job()
        elif job not in pending:
            pending.append(job)
