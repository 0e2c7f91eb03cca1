"""Forgetting in the local span store: the traces that hold a forgotten turn or its text.

A trace is deleted whole (its spans are one turn or one run): every trace with a span of a
forgotten user, dialogue or event, and every trace whose attributes or events quote a forgotten
text (``telemetry.capture_content`` puts prompts in spans, and a later prompt quotes the window).
The file is written with ``secure_delete`` and its write-ahead log emptied afterwards.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from contextlib import closing
from pathlib import Path

from opentelemetry import trace

from tianma.telemetry.span_store import BUSY_TIMEOUT_S

MIN_TEXT = 3
"""Shorter texts are not searched for (they would match unrelated spans)."""


def erase_spans(
    path: Path,
    *,
    user_id: str | None = None,
    dialogue_ids: Collection[str] = (),
    event_ids: Collection[str] = (),
    texts: Collection[str] = (),
) -> int:
    """Delete the traces of ``user_id`` (all of them), of ``dialogue_ids`` and ``event_ids``, and
    those quoting one of ``texts``; returns how many spans were deleted (0 without a file)."""
    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if callable(flush):
        flush()  # spans of the forgotten turns still in a batch are written first, then deleted
    if not path.is_file():
        return 0
    with closing(sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)) as conn:
        conn.execute("PRAGMA secure_delete=ON")
        try:
            traces = _traces(conn, user_id, dialogue_ids, event_ids, [x for x in texts if len(x) >= MIN_TEXT])
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return 0
            raise
        deleted = 0
        with conn:
            for start in range(0, len(traces), 500):
                chunk = traces[start : start + 500]
                marks = ",".join("?" * len(chunk))
                deleted += conn.execute(f"DELETE FROM spans WHERE trace_id IN ({marks})", chunk).rowcount
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return deleted


def _traces(
    conn: sqlite3.Connection,
    user_id: str | None,
    dialogue_ids: Collection[str],
    event_ids: Collection[str],
    texts: list[str],
) -> list[str]:
    found: set[str] = set()

    def add(where: str, params: list[str]) -> None:
        for start in range(0, len(params), 400):
            chunk = params[start : start + 400]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in conn.execute(f"SELECT DISTINCT trace_id FROM spans WHERE {where} IN ({marks})", chunk))

    if user_id is not None:
        add("user_id", [user_id])
    add("conversation_id", list(dialogue_ids))
    add("event_id", list(event_ids))
    for start in range(0, len(texts), 50):  # attributes and events are JSON with unescaped text
        chunk = texts[start : start + 50]  # one scan of the table for up to 50 texts
        where = " OR ".join(["instr(attributes, ?) > 0 OR instr(events, ?) > 0"] * len(chunk))
        params = [n for needle in chunk for n in (needle, needle)]
        found.update(r[0] for r in conn.execute(f"SELECT DISTINCT trace_id FROM spans WHERE {where}", params))
    return sorted(found)
