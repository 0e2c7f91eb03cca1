"""Minimal checkpoints: one per dialogue, holding only what the next turn needs.

LangGraph's savers write the whole graph state under a new id on every turn — this turn's raw
message, the text of every memory it injected, the message's vectors — and keep them all.
:class:`WindowCleaning` keeps, of each checkpoint it is given, only the channels of
:data:`KEPT_CHANNELS` (the window, its summary, the ids), with the window's and summary's text
passed through ``redact`` (what an event may store of a user's text), and deletes the thread's
older checkpoints once the new one is written. What is kept grows with the number of dialogues ×
the window, not with the number of turns. :class:`WindowSaver` is it on LangGraph's SQLite saver
(``checkpoints.db`` in the home); :mod:`tianma.graph.checkpoints_postgres` on its PostgreSQL
saver, in the store's database, when ``sql.url`` is PostgreSQL (:func:`open_window_saver`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from sqlalchemy import make_url

if TYPE_CHECKING:
    from tianma.graph.checkpoints_postgres import PostgresWindowSaver
    from tianma.settings import Settings

REDACTED_CACHE = 4096
"""Window texts whose redaction is remembered (in memory only)."""
KEPT_CHANNELS = frozenset({"user_id", "dialogue_id", "event_id", "messages", "summary", "summary_turns"})
"""State channels a checkpoint keeps (``event_id``: the previous turn, which this one may judge);
the rest of a turn's state lives only for that turn."""


class WindowCleaning:
    """Keeps of a checkpoint only :data:`KEPT_CHANNELS`, redacted, and only the newest per thread.
    Mixed in before a LangGraph saver, whose ``put`` it wraps; the saver's subclass says how to
    delete a thread's older checkpoints (:meth:`_prune`)."""

    def _init_cleaning(self, redact: Callable[[str], str]) -> None:
        self._redact_text = redact
        self._clean_texts: OrderedDict[str, str] = OrderedDict()
        self._clean_lock = threading.Lock()

    def _redact(self, text: str) -> str:
        """``redact(text)``, once per text: a window is saved whole on every turn, and running the
        secret and PII detectors on its 40 messages each time cost ~4 ms a turn (put p50 6.2 ms,
        2.4 with this). The redacted form maps to itself, so a window read back is not redacted
        again. Bounded (:data:`REDACTED_CACHE`); emptied by :meth:`forget_cache`."""
        with self._clean_lock:
            known = self._clean_texts.get(text)
            if known is not None:
                self._clean_texts.move_to_end(text)
                return known
        clean = self._redact_text(text)
        with self._clean_lock:
            self._clean_texts[text] = clean
            self._clean_texts[clean] = clean
            while len(self._clean_texts) > REDACTED_CACHE:
                self._clean_texts.popitem(last=False)
        return clean

    def forget_cache(self) -> None:
        """Drop the texts kept in memory (after a forget)."""
        with self._clean_lock:
            self._clean_texts.clear()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        values = {k: self._clean(k, v) for k, v in checkpoint["channel_values"].items() if k in KEPT_CHANNELS}
        saved: RunnableConfig = super().put(  # type: ignore[misc]
            config, {**checkpoint, "channel_values": values}, metadata, new_versions
        )
        self._prune(saved)
        return saved

    def _prune(self, saved: RunnableConfig) -> None:
        """Delete the thread's checkpoints older than ``saved``."""
        raise NotImplementedError

    def _clean(self, channel: str, value: Any) -> Any:
        if channel == "messages" and isinstance(value, list):
            return [self._message(m) for m in value]
        if channel == "summary" and isinstance(value, dict):
            return {k: self._redact(v) if isinstance(v, str) else v for k, v in value.items()}
        return value

    def _message(self, message: Any) -> Any:
        if isinstance(message, BaseMessage) and isinstance(message.content, str):
            return message.model_copy(update={"content": self._redact(message.content)})
        return message

class WindowSaver(WindowCleaning, SqliteSaver):
    """A SQLite checkpointer that keeps one minimal, redacted checkpoint per thread."""

    def __init__(self, conn: sqlite3.Connection, redact: Callable[[str], str]) -> None:
        SqliteSaver.__init__(self, conn)
        self._init_cleaning(redact)
        conn.execute("PRAGMA secure_delete=ON")  # what is deleted is overwritten, not left in free pages

    def _prune(self, saved: RunnableConfig) -> None:
        """Delete the thread's checkpoints (and pending writes) older than ``saved``."""
        c = saved["configurable"]
        key = (str(c["thread_id"]), c["checkpoint_ns"], c["checkpoint_id"])
        with self.cursor() as cur:
            for table in ("checkpoints", "writes"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id <> ?", key
                )

    def threads_quoting(self, prefix: str, texts: list[str]) -> list[str]:
        """Threads whose id starts with ``prefix`` and whose checkpoint holds one of ``texts``
        (msgpack keeps strings as UTF-8, so a byte search finds them)."""
        found: set[str] = set()
        with self.cursor(transaction=False) as cur:
            for text in texts:
                cur.execute(
                    "SELECT DISTINCT thread_id FROM checkpoints WHERE substr(thread_id, 1, ?) = ? "
                    "AND instr(checkpoint, ?) > 0",
                    (len(prefix), prefix, text.encode()),
                )
                found.update(str(row[0]) for row in cur.fetchall())
        return sorted(found)

    def compact(self) -> None:
        """Fold the write-ahead log into the file and empty it (after a forget: no old copies)."""
        with self.lock:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def thread_ids(self) -> set[str]:
        """Every thread with a checkpoint."""
        with self.cursor(transaction=False) as cur:
            cur.execute("SELECT DISTINCT thread_id FROM checkpoints")
            return {str(row[0]) for row in cur.fetchall()}

    def close(self) -> None:
        """Close the SQLite connection."""
        self.conn.close()


def open_window_saver(settings: Settings, redact: Callable[[str], str]) -> WindowSaver | PostgresWindowSaver:
    """The window saver for ``settings``: in the store's PostgreSQL database when ``sql.url`` is
    PostgreSQL, else ``checkpoints.db`` in the home."""
    url = make_url(settings.sql_url)
    if url.get_backend_name() == "postgresql":
        from tianma.graph.checkpoints_postgres import PostgresWindowSaver

        return PostgresWindowSaver.open(url, redact)
    return WindowSaver(sqlite3.connect(settings.checkpoint_path, check_same_thread=False), redact)


def copy_windows(path: Path, target: BaseCheckpointSaver[Any]) -> int:
    """Put each thread's newest checkpoint of the SQLite file ``path`` into ``target`` (a home
    moved to PostgreSQL keeps its open dialogues); how many threads there were."""
    if not path.is_file():
        return 0
    conn = sqlite3.connect(path)
    try:
        copied = 0
        for found in SqliteSaver(conn).list(None):  # one checkpoint per thread: the saver kept only the newest
            thread = str(found.config["configurable"]["thread_id"])
            config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            target.put(config, found.checkpoint, found.metadata, found.checkpoint["channel_versions"])
            copied += 1
        return copied
    finally:
        conn.close()
