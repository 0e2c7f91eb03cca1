"""A local span store: finished spans in a SQLite file (``<home>/spans.db``) for the review UI.

:class:`SqliteSpanExporter` is written to by a span processor (usually a BatchSpanProcessor
thread); :class:`SpanStore` reads the same file from any thread (one connection per call,
WAL mode, so readers never wait for the writer). Nothing leaves the machine.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tianma.telemetry import semconv as sc

logger = logging.getLogger(__name__)

TURN_SPAN_NAME = f"invoke_agent {sc.AGENT_NAME}"
"""The root span of a turn (``Runtime.chat``)."""
PRUNE_EVERY_S = 3600.0
"""How often the exporter applies its retention while running (and once on start)."""
BUSY_TIMEOUT_S = 10.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    parent_span_id TEXT,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    end_ns INTEGER NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    attributes TEXT NOT NULL,
    events TEXT NOT NULL,
    event_id TEXT,
    user_id TEXT,
    conversation_id TEXT,
    PRIMARY KEY (trace_id, span_id)
);
CREATE INDEX IF NOT EXISTS ix_spans_start ON spans (start_ns);
CREATE INDEX IF NOT EXISTS ix_spans_name_start ON spans (name, start_ns);
CREATE INDEX IF NOT EXISTS ix_spans_event ON spans (event_id) WHERE event_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_spans_user ON spans (user_id, trace_id) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_spans_conversation ON spans (conversation_id)
    WHERE conversation_id IS NOT NULL;
"""

_COLUMNS = (
    "trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, status, status_message, "
    "attributes, events"
)


def _to_datetime(ns: int) -> datetime:
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, tz=UTC) + timedelta(microseconds=rest // 1000)


def _to_ns(at: datetime) -> int:
    """Nanoseconds since the epoch (a naive datetime is taken as UTC)."""
    aware = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return (aware - _EPOCH) // timedelta(microseconds=1) * 1000


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event recorded on a span (a guardrail result, a strategy conflict …)."""

    name: str
    time_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def time(self) -> datetime:
        return _to_datetime(self.time_ns)


@dataclass(frozen=True, slots=True)
class StoredSpan:
    """One finished span as the store keeps it (ids in lowercase hex, times in ns since epoch)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    """``INTERNAL``, ``CLIENT`` …"""
    start_ns: int
    end_ns: int
    status: str
    """``UNSET``, ``OK`` or ``ERROR``."""
    status_message: str | None
    attributes: dict[str, Any]
    """Attribute values as JSON gives them back: sequences are lists."""
    events: tuple[StoredEvent, ...]

    @property
    def start(self) -> datetime:
        return _to_datetime(self.start_ns)

    @property
    def end(self) -> datetime:
        return _to_datetime(self.end_ns)

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


@dataclass(frozen=True, slots=True)
class TurnSummary:
    """A row of :meth:`SpanStore.recent_turns`: one ``invoke_agent tianma`` span."""

    trace_id: str
    span_id: str
    event_id: str | None
    """The event the turn recorded (None when the turn failed before capture_signals)."""
    user_id: str | None
    conversation_id: str | None
    start: datetime
    duration_ms: float
    status: str


def _json_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _attributes_json(attributes: Any) -> str:
    return json.dumps(
        {k: _json_value(v) for k, v in dict(attributes or {}).items()}, ensure_ascii=False, default=str
    )


def _span_row(span: ReadableSpan) -> tuple[Any, ...]:
    ctx = span.context
    if ctx is None:
        raise ValueError(f"span {span.name!r} has no context")
    attrs = dict(span.attributes or {})
    events = [
        {
            "name": e.name,
            "time_ns": e.timestamp,
            "attributes": {k: _json_value(v) for k, v in (e.attributes or {}).items()},
        }
        for e in span.events
    ]
    start_ns = span.start_time or 0
    end_ns = span.end_time or start_ns

    def text(key: str) -> str | None:
        value = attrs.get(key)
        return None if value is None or value == "" else str(value)

    return (
        format(ctx.trace_id, "032x"),
        format(ctx.span_id, "016x"),
        format(span.parent.span_id, "016x") if span.parent is not None else None,
        span.name,
        span.kind.name,
        start_ns,
        end_ns,
        span.status.status_code.name,
        span.status.description,
        _attributes_json(attrs),
        json.dumps(events, ensure_ascii=False, default=str),
        text(sc.TIANMA_EVENT_ID),
        text(sc.TIANMA_USER_ID),
        text(sc.GEN_AI_CONVERSATION_ID),
    )


def _stored(row: Sequence[Any]) -> StoredSpan:
    events = tuple(
        StoredEvent(str(e["name"]), int(e["time_ns"]), dict(e.get("attributes") or {}))
        for e in json.loads(row[10])
    )
    return StoredSpan(
        trace_id=row[0],
        span_id=row[1],
        parent_span_id=row[2],
        name=row[3],
        kind=row[4],
        start_ns=int(row[5]),
        end_ns=int(row[6]),
        status=row[7],
        status_message=row[8],
        attributes=dict(json.loads(row[9])),
        events=events,
    )


def _prune(conn: sqlite3.Connection, older_than: datetime) -> int:
    with conn:
        return conn.execute("DELETE FROM spans WHERE start_ns < ?", (_to_ns(older_than),)).rowcount


class SqliteSpanExporter(SpanExporter):
    """Writes finished spans to a SQLite file (created with its folder when missing).

    Args:
        path: the file, e.g. ``<home>/spans.db``.
        retention: spans that started longer ago than this are deleted on start and then at most
            once an hour while exporting; None keeps everything.

    Thread-safe: one connection, used under a lock.
    """

    def __init__(self, path: Path, retention: timedelta | None = None) -> None:
        self.path = path
        self.retention = retention
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        self._closed = False
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error:
            self._conn.close()
            raise
        self._last_prune = time.monotonic()
        if retention is not None:
            self.prune(datetime.now(UTC) - retention)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        rows = []
        for span in spans:
            try:
                rows.append(_span_row(span))
            except (ValueError, TypeError):
                logger.warning("span %r not stored", span.name, exc_info=True)
        with self._lock:
            if self._closed:
                return SpanExportResult.FAILURE
            try:
                with self._conn:
                    self._conn.executemany(
                        f"INSERT OR REPLACE INTO spans ({_COLUMNS}, event_id, user_id, conversation_id) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        rows,
                    )
                if self.retention is not None and time.monotonic() - self._last_prune >= PRUNE_EVERY_S:
                    self._last_prune = time.monotonic()
                    _prune(self._conn, datetime.now(UTC) - self.retention)
            except sqlite3.Error:
                logger.warning("spans not written to %s", self.path, exc_info=True)
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def prune(self, older_than: datetime) -> int:
        """Delete the spans that started before ``older_than``; returns how many."""
        with self._lock:
            if self._closed:
                return 0
            return _prune(self._conn, older_than)

    def shutdown(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is committed before it returns


class SpanStore:
    """Reads a span file written by :class:`SqliteSpanExporter` (from any thread).

    A missing file (local store off, or no turn yet) reads as empty.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection | None]:
        if not self.path.is_file():
            yield None
            return
        uri = self.path.resolve().as_uri() + "?mode=rw"
        with closing(sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)) as conn:
            yield conn

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._connect() as conn:
            if conn is None:
                return []
            try:
                return list(conn.execute(sql, params).fetchall())
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):  # created but not initialised yet
                    return []
                raise

    def trace(self, trace_id: str) -> list[StoredSpan]:
        """Every stored span of a trace, in start order."""
        rows = self._query(
            f"SELECT {_COLUMNS} FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id", (trace_id,)
        )
        return [_stored(r) for r in rows]

    def trace_of_event(self, event_id: str) -> str | None:
        """The trace of the turn that recorded ``event_id``, if its spans are stored."""
        rows = self._query(
            "SELECT trace_id FROM spans WHERE event_id = ? ORDER BY start_ns DESC LIMIT 1", (event_id,)
        )
        return str(rows[0][0]) if rows else None

    def recent_turns(self, user_id: str | None = None, limit: int = 50) -> list[TurnSummary]:
        """The latest turns (``invoke_agent tianma`` spans), newest first; one user's or everyone's."""
        where = "r.name = ?"
        params: list[Any] = [TURN_SPAN_NAME]
        if user_id is not None:
            where += " AND r.trace_id IN (SELECT trace_id FROM spans WHERE user_id = ?)"
            params.append(user_id)
        rows = self._query(
            "SELECT r.trace_id, r.span_id, r.conversation_id, r.start_ns, r.end_ns, r.status,"
            " (SELECT c.event_id FROM spans c WHERE c.trace_id = r.trace_id AND c.event_id IS NOT NULL"
            "  LIMIT 1),"
            " (SELECT c.user_id FROM spans c WHERE c.trace_id = r.trace_id AND c.user_id IS NOT NULL"
            "  LIMIT 1)"
            f" FROM spans r WHERE {where} ORDER BY r.start_ns DESC LIMIT ?",
            [*params, max(limit, 0)],
        )
        return [
            TurnSummary(
                trace_id=r[0],
                span_id=r[1],
                event_id=r[6],
                user_id=r[7],
                conversation_id=r[2],
                start=_to_datetime(int(r[3])),
                duration_ms=(int(r[4]) - int(r[3])) / 1e6,
                status=r[5],
            )
            for r in rows
        ]
