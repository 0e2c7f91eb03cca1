"""Forgetting in the local span store: the traces that hold a forgotten turn or its text.

A trace is deleted whole (its spans are one turn or one run): every trace with a span of a
forgotten user, dialogue or event, and every trace whose attributes or events quote a forgotten
text (``telemetry.capture_content`` puts prompts in spans, and a later prompt quotes the window).
A SQLite file is written with ``secure_delete`` and its write-ahead log emptied afterwards; on
PostgreSQL the table is vacuumed, as the store's own tables are after a forget.
"""

from __future__ import annotations

from collections.abc import Collection

from opentelemetry import trace
from sqlalchemy import Connection, delete, func, inspect, or_, select, text

from tianma.telemetry.span_store import SpanTarget, open_engine, release, spans

MIN_TEXT = 3
"""Shorter texts are not searched for (they would match unrelated spans)."""


def erase_spans(
    target: SpanTarget,
    *,
    user_id: str | None = None,
    dialogue_ids: Collection[str] = (),
    event_ids: Collection[str] = (),
    texts: Collection[str] = (),
) -> int:
    """Delete the traces of ``user_id`` (all of them), of ``dialogue_ids`` and ``event_ids``, and
    those quoting one of ``texts``; returns how many spans were deleted (0 without a store)."""
    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if callable(flush):
        flush()  # spans of the forgotten turns still in a batch are written first, then deleted
    engine = open_engine(target, create=False)
    if engine is None:
        return 0
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql("PRAGMA secure_delete=ON")  # a connection setting, allowed in a transaction
            if not inspect(conn).has_table("spans"):  # the local store was never written to
                return 0
            traces = _traces(conn, user_id, dialogue_ids, event_ids, [x for x in texts if len(x) >= MIN_TEXT])
            deleted = 0
            for start in range(0, len(traces), 500):
                chunk = traces[start : start + 500]
                deleted += int(conn.execute(delete(spans).where(spans.c.trace_id.in_(chunk))).rowcount or 0)
        if deleted:
            _settle(engine.dialect.name, target)
    finally:
        release(target, engine)
    return deleted


def _settle(dialect: str, target: SpanTarget) -> None:
    """Let the deleted bytes go: SQLite's log checkpointed away, PostgreSQL's table vacuumed."""
    engine = open_engine(target, create=False)
    if engine is None:
        return
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)" if dialect == "sqlite" else "VACUUM spans"))
    finally:
        release(target, engine)


def _traces(
    conn: Connection,
    user_id: str | None,
    dialogue_ids: Collection[str],
    event_ids: Collection[str],
    texts: list[str],
) -> list[str]:
    found: set[str] = set()
    c = spans.c

    def add(column: object, values: list[str]) -> None:
        for start in range(0, len(values), 400):
            chunk = values[start : start + 400]
            found.update(conn.execute(select(c.trace_id).distinct().where(column.in_(chunk))).scalars())  # type: ignore[attr-defined]

    if user_id is not None:
        add(c.user_id, [user_id])
    add(c.conversation_id, list(dialogue_ids))
    add(c.event_id, list(event_ids))
    position = func.instr if conn.dialect.name == "sqlite" else func.strpos  # plain substring, case kept
    for start in range(0, len(texts), 50):  # attributes and events are JSON with unescaped text
        chunk = texts[start : start + 50]  # one scan of the table for up to 50 texts
        quoted = or_(*(position(col, needle) > 0 for needle in chunk for col in (c.attributes, c.events)))
        found.update(conn.execute(select(c.trace_id).distinct().where(quoted)).scalars())
    return sorted(found)
