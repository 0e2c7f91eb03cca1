"""Minimal checkpoints in PostgreSQL: :class:`~tianma.graph.checkpoints.WindowCleaning` on
LangGraph's :class:`PostgresSaver`, in the store's own database, so that every ``serve`` process
and worker on it sees one window per dialogue.

LangGraph's saver keeps each channel's value in ``checkpoint_blobs`` per version and every
checkpoint in ``checkpoints``; after each write the thread is pruned to its newest checkpoint
(``prune(strategy="keep_latest")``, which also deletes the blobs only older ones referenced).
Connections come from a small pool (turns of different dialogues run in parallel threads).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool
from sqlalchemy import URL

from tianma.graph.checkpoints import WindowCleaning

POOL_SIZE = 4
"""Connections a process keeps to the checkpoint tables."""
_MIGRATION_LOCK = 0x74696D6163  # pg_advisory_lock key (a session lock): one process creates LangGraph's tables


def conninfo(url: URL) -> str:
    """A libpq connection string for a SQLAlchemy ``postgresql+psycopg://`` URL."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresWindowSaver(WindowCleaning, PostgresSaver):
    """A PostgreSQL checkpointer that keeps one minimal, redacted checkpoint per thread."""

    def __init__(self, pool: ConnectionPool[Any], redact: Callable[[str], str]) -> None:
        PostgresSaver.__init__(self, pool)
        self._init_cleaning(redact)
        self._pool = pool

    @classmethod
    def open(cls, url: URL, redact: Callable[[str], str]) -> PostgresWindowSaver:
        """Connect to the database of ``url`` and create (or migrate) LangGraph's tables."""
        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        pool: ConnectionPool[Any] = ConnectionPool(conninfo(url), min_size=1, max_size=POOL_SIZE, kwargs=kwargs, open=True)
        try:
            saver = cls(pool, redact)
            with pool.connection() as conn:  # one process migrates; a session lock, not a transaction's:
                conn.execute("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))  # CREATE INDEX CONCURRENTLY
                try:  # in LangGraph's migrations waits for every open transaction
                    saver.setup()
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
        except BaseException:
            pool.close()
            raise
        return saver

    def _prune(self, saved: RunnableConfig) -> None:
        self.prune([str(saved["configurable"]["thread_id"])], strategy="keep_latest")

    def threads_quoting(self, prefix: str, texts: list[str]) -> list[str]:
        """Threads whose id starts with ``prefix`` and whose window holds one of ``texts`` (the
        messages are a msgpack blob, where strings are UTF-8: a byte search finds them)."""
        found: set[str] = set()
        with self._cursor() as cur:
            for text in texts:
                cur.execute(
                    "SELECT DISTINCT thread_id FROM checkpoint_blobs WHERE left(thread_id, %s) = %s "
                    "AND position(%s::bytea in blob) > 0 "
                    "UNION SELECT DISTINCT thread_id FROM checkpoints WHERE left(thread_id, %s) = %s "
                    "AND strpos(checkpoint::text, %s) > 0",
                    (len(prefix), prefix, text.encode(), len(prefix), prefix, text),
                )
                found.update(str(row["thread_id"]) for row in cur.fetchall())
        return sorted(found)

    def thread_ids(self) -> set[str]:
        """Every thread with a checkpoint."""
        with self._cursor() as cur:
            cur.execute("SELECT DISTINCT thread_id FROM checkpoints")
            return {str(row["thread_id"]) for row in cur.fetchall()}

    def compact(self) -> None:
        """``VACUUM`` the checkpoint tables (after a forget): dead rows' space is freed for reuse;
        PostgreSQL does not overwrite the bytes as SQLite's ``secure_delete`` does."""
        with self._pool.connection() as conn:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                conn.execute(f"VACUUM {table}")

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()
