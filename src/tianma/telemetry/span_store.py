"""A local span store: finished spans in SQL for the review UI — a SQLite file of the home
(``<home>/spans.db``), or a ``spans`` table in the store's PostgreSQL database, so that every
``serve`` process and worker of a deployment writes to one place and ``/ui`` shows them all.

:class:`SqlSpanExporter` is written to by a span processor (usually a BatchSpanProcessor
thread); :class:`SpanStore` reads the same spans from any thread (SQLite in WAL mode, so readers
never wait for the writer). A *target* is a :class:`~pathlib.Path` (a SQLite file) or a
SQLAlchemy URL. Nothing leaves the machine unless the store's database is elsewhere.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Index,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    text,
)  # fmt: skip
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from tianma.telemetry import semconv as sc

logger = logging.getLogger(__name__)

SpanTarget = Path | str
"""Where spans are kept: a SQLite file, or a SQLAlchemy URL (PostgreSQL)."""

TURN_SPAN_NAME = f"invoke_agent {sc.AGENT_NAME}"
"""The root span of a turn (``Runtime.chat``)."""
PRUNE_EVERY_S = 3600.0
"""How often the exporter applies its retention while running (and once on start)."""
BUSY_TIMEOUT_S = 10.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_metadata = MetaData()
spans = Table(
    "spans", _metadata,
    Column("trace_id", String, primary_key=True),
    Column("span_id", String, primary_key=True),
    Column("parent_span_id", String),
    Column("name", String, nullable=False),
    Column("kind", String, nullable=False),
    Column("start_ns", BigInteger, nullable=False),
    Column("end_ns", BigInteger, nullable=False),
    Column("status", String, nullable=False),
    Column("status_message", Text),
    Column("attributes", Text, nullable=False),
    Column("events", Text, nullable=False),
    Column("event_id", String),
    Column("user_id", String),
    Column("conversation_id", String),
    Index("ix_spans_start", "start_ns"),
    Index("ix_spans_name_start", "name", "start_ns"),
    Index("ix_spans_event", "event_id", sqlite_where=text("event_id IS NOT NULL"),
          postgresql_where=text("event_id IS NOT NULL")),
    Index("ix_spans_user", "user_id", "trace_id", sqlite_where=text("user_id IS NOT NULL"),
          postgresql_where=text("user_id IS NOT NULL")),
    Index("ix_spans_conversation", "conversation_id", sqlite_where=text("conversation_id IS NOT NULL"),
          postgresql_where=text("conversation_id IS NOT NULL")),
)  # fmt: skip
"""The same table and indexes the first span files were created with (raw SQL then)."""

_COLUMNS = (
    "trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns", "status", "status_message",
    "attributes", "events",
)  # fmt: skip
_ROW = (*_COLUMNS, "event_id", "user_id", "conversation_id")


def _wal(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


_shared: dict[str, Engine] = {}
_shared_lock = threading.Lock()


def open_engine(target: SpanTarget, *, create: bool) -> Engine | None:
    """An engine on ``target``; ``None`` for a SQLite file that does not exist when not ``create``.
    A file is opened per call (cheap); a server's engine is shared per URL (one pool)."""
    if isinstance(target, Path):
        if not create and not target.is_file():
            return None
        if create:
            target.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(f"sqlite:///{target}", connect_args={"timeout": BUSY_TIMEOUT_S,
                                                                         "check_same_thread": False})  # fmt: skip
            event.listen(engine, "connect", _wal)
            return engine
        uri = target.resolve().as_uri() + "?mode=rw"  # never creates the file
        return create_engine("sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S,
                                                                           check_same_thread=False))  # fmt: skip
    with _shared_lock:
        if target not in _shared:
            _shared[target] = create_engine(target, pool_pre_ping=True)
        return _shared[target]


def release(target: SpanTarget, engine: Engine) -> None:
    """Done with an engine of :func:`open_engine`: a file's is closed, a server's stays shared."""
    if isinstance(target, Path):
        engine.dispose()


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


def _prune(engine: Engine, older_than: datetime) -> int:
    with engine.begin() as conn:
        return int(conn.execute(delete(spans).where(spans.c.start_ns < _to_ns(older_than))).rowcount or 0)


def _upsert(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert, or replace a span stored before (a span is exported once; replaying it is harmless)."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(spans)
    keep = {c: stmt.excluded[c] for c in _ROW if c not in ("trace_id", "span_id")}
    conn.execute(stmt.on_conflict_do_update(index_elements=["trace_id", "span_id"], set_=keep),
                 [dict(zip(_ROW, r, strict=True)) for r in rows])  # fmt: skip


class SqlSpanExporter(SpanExporter):
    """Writes finished spans to a SQLite file (created with its folder when missing) or to the
    ``spans`` table of a database (created when missing).

    Args:
        target: the file, e.g. ``<home>/spans.db``, or a SQLAlchemy URL.
        retention: spans that started longer ago than this are deleted on start and then at most
            once an hour while exporting; None keeps everything.

    Thread-safe: writes under a lock.
    """

    def __init__(self, target: SpanTarget, retention: timedelta | None = None) -> None:
        self.target = target
        self.retention = retention
        self._lock = threading.Lock()
        engine = open_engine(target, create=True)
        assert engine is not None  # created
        self._engine = engine
        self._closed = False
        try:
            _metadata.create_all(engine, checkfirst=True)
        except SQLAlchemyError:
            release(target, engine)
            raise
        self._last_prune = time.monotonic()
        if retention is not None:
            self.prune(datetime.now(UTC) - retention)

    @property
    def path(self) -> Path:
        """The SQLite file written to (only for a file target)."""
        if not isinstance(self.target, Path):
            raise TypeError(f"spans go to {self.target!r}, not a file")
        return self.target

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
                if rows:
                    with self._engine.begin() as conn:
                        _upsert(conn, rows)
                if self.retention is not None and time.monotonic() - self._last_prune >= PRUNE_EVERY_S:
                    self._last_prune = time.monotonic()
                    _prune(self._engine, datetime.now(UTC) - self.retention)
            except SQLAlchemyError:
                logger.warning("spans not written to %s", self.target, exc_info=True)
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def prune(self, older_than: datetime) -> int:
        """Delete the spans that started before ``older_than``; returns how many."""
        with self._lock:
            if self._closed:
                return 0
            return _prune(self._engine, older_than)

    def shutdown(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                release(self.target, self._engine)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is committed before it returns


class SpanStore:
    """Reads the spans written by :class:`SqlSpanExporter` to ``target`` (from any thread).

    A missing file or table (local store off, or no turn yet) reads as empty.
    """

    def __init__(self, target: SpanTarget) -> None:
        self.target = target

    @contextmanager
    def _connect(self) -> Iterator[Connection | None]:
        engine = open_engine(self.target, create=False)
        if engine is None:
            yield None
            return
        try:
            with engine.connect() as conn:
                yield conn
        finally:
            release(self.target, engine)

    def _query(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self._connect() as conn:
            if conn is None:
                return []
            try:
                return [tuple(r) for r in conn.execute(text(sql), params)]
            except SQLAlchemyError as exc:
                if "no such table" in str(exc) or "UndefinedTable" in str(exc):  # not initialised yet
                    return []
                raise

    def trace(self, trace_id: str) -> list[StoredSpan]:
        """Every stored span of a trace, in start order."""
        rows = self._query(
            f"SELECT {', '.join(_COLUMNS)} FROM spans WHERE trace_id = :t ORDER BY start_ns, span_id", {"t": trace_id}
        )
        return [_stored(r) for r in rows]

    def trace_of_event(self, event_id: str) -> str | None:
        """The trace of the turn that recorded ``event_id``, if its spans are stored."""
        rows = self._query(
            "SELECT trace_id FROM spans WHERE event_id = :e ORDER BY start_ns DESC LIMIT 1", {"e": event_id}
        )
        return str(rows[0][0]) if rows else None

    def turn_durations(self, experiment: str) -> dict[str, list[float]]:
        """Milliseconds of the stored turns of an online experiment, by arm."""
        rows = self._query("SELECT attributes, start_ns, end_ns FROM spans WHERE name = :name AND attributes LIKE :tag",
                           {"name": TURN_SPAN_NAME, "tag": f"%{json.dumps(experiment, ensure_ascii=False)}%"})  # fmt: skip
        out: dict[str, list[float]] = {}
        for attributes, start, end in rows:
            attrs = json.loads(attributes)
            if attrs.get(sc.TIANMA_EXPERIMENT) == experiment:
                out.setdefault(str(attrs.get(sc.TIANMA_ARM, "")), []).append((int(end) - int(start)) / 1e6)
        return out

    def recent_turns(self, user_id: str | None = None, limit: int = 50) -> list[TurnSummary]:
        """The latest turns (``invoke_agent tianma`` spans), newest first; one user's or everyone's."""
        where = "r.name = :name"
        params: dict[str, Any] = {"name": TURN_SPAN_NAME, "limit": max(limit, 0)}
        if user_id is not None:
            where += " AND r.trace_id IN (SELECT trace_id FROM spans WHERE user_id = :user)"
            params["user"] = user_id
        rows = self._query(
            "SELECT r.trace_id, r.span_id, r.conversation_id, r.start_ns, r.end_ns, r.status,"
            " (SELECT c.event_id FROM spans c WHERE c.trace_id = r.trace_id AND c.event_id IS NOT NULL"
            "  LIMIT 1),"
            " (SELECT c.user_id FROM spans c WHERE c.trace_id = r.trace_id AND c.user_id IS NOT NULL"
            "  LIMIT 1)"
            f" FROM spans r WHERE {where} ORDER BY r.start_ns DESC LIMIT :limit",
            params,
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
