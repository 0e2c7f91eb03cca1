"""Old history compressed by day (seed 000 §4.4: cut the old dialogues by day, one topic summary
per day; only what has lasting value becomes searchable).

A day summary names what the user talked about that day — each dialogue by its title or, when
the source has none, by the first words of its first message — and how many messages it had. It
is extractive (no model is called, so 10k messages import in minutes on a NAS CPU), an
``experience`` with the day's messages as provenance, and searchable; the messages themselves
stay in the log. One summary per user and day (``import-day:<date>``): a later import that adds
messages to the day rewrites it as a new version. All summaries of one call are one undoable
maintenance run (``tianma reflect undo <run>``).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from tianma.memory.service import Memory
from tianma.storage import schema as t
from tianma.storage.changes import ChangeSet
from tianma.storage.imported import IMPORT_SOURCE, user_messages_between
from tianma.storage.records import MemoryRecord, Provenance
from tianma.storage.sql_store import map_sql_errors

MIN_MESSAGES = 2
"""A day with fewer user messages ("hi") gets no summary."""
MAX_CHARS = 400
LABEL_CHARS = 40
SUMMARY_IMPORTANCE = 0.5
SUMMARY_CONFIDENCE = 0.6


@dataclass(frozen=True, slots=True)
class DaysDone:
    """What summarising some days did."""

    created: int
    updated: int
    skipped: int
    """Days with too few messages, or whose summary was already as it would be written."""
    run_id: str | None
    """The undoable run that wrote them (None when nothing changed)."""


def day_of(moment: datetime, zone: tzinfo) -> date:
    """The user's calendar day of a moment."""
    return moment.astimezone(zone).date()


def summary_text(day: date, messages: Sequence[MemoryRecord]) -> str:
    """The summary of one day's imported user messages (oldest first)."""
    labels: dict[str, str] = {}
    counts: dict[str, int] = {}
    for m in messages:
        key = m.dialogue_id or ""
        counts[key] = counts.get(key, 0) + 1
        if key not in labels:
            title = (m.data.get("import") or {}).get("title")
            first = " ".join(m.content.split())
            labels[key] = str(title) if title else first[:LABEL_CHARS] + ("…" if len(first) > LABEL_CHARS else "")
    chinese = sum(_is_han(m.content) for m in messages) * 2 >= len(messages)
    if chinese:
        parts = [f"「{labels[k]}」（{counts[k]}条）" for k in labels]
        text = f"{day.isoformat()} 聊过：" + "；".join(parts)
    else:
        parts = [f"“{labels[k]}” ({counts[k]} message{'s' if counts[k] > 1 else ''})" for k in labels]
        text = f"On {day.isoformat()} we talked about: " + "; ".join(parts)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def summarise_days(
    memory: Memory, zone: tzinfo, lock: threading.RLock, user_id: str, days: Sequence[date], at: datetime
) -> DaysDone:
    """Write or refresh the summary of each of ``days`` from the user's imported messages; the
    summaries are read and embedded before the memory lock is taken for the writes."""
    planned: list[tuple[date, str, dict[str, Any]]] = []
    skipped = 0
    for day in sorted(set(days)):
        start = datetime.combine(day, time(), zone)
        messages = [m for m in user_messages_between(memory.store, user_id, start, start + timedelta(days=1))
                    if m.provenance.source == IMPORT_SOURCE]  # fmt: skip
        if len(messages) < MIN_MESSAGES:
            skipped += 1
            continue
        planned.append((day, summary_text(day, messages), {
            "key": f"import.day.{day.isoformat()}", "importance": SUMMARY_IMPORTANCE,
            "confidence": SUMMARY_CONFIDENCE, "valid_from": start,
            "data": {"import": {"day": day.isoformat(), "messages": len(messages)}},
            "provenance": Provenance(tuple(m.id for m in messages),
                                     tuple(dict.fromkeys(m.dialogue_id for m in messages if m.dialogue_id)),
                                     source=IMPORT_SOURCE),
        }))  # fmt: skip
    vectors = memory.embedder.embed_passages([content for _, content, _ in planned])
    created = updated = 0
    run_id = str(uuid.uuid4())
    written: list[tuple[str, int]] = []
    """(record id, row of ``vectors``) of each summary written."""
    with lock, map_sql_errors(), memory.store.tx.unit() as conn:
        changes = ChangeSet(conn, user_id, run_id, at)
        for row, (day, content, fields) in enumerate(planned):
            existing = _summary_id(conn, user_id, day)
            if existing is None:
                record_id = changes.create("experience", content, fields.pop("provenance"),
                                           external_id=_external_id(day), **fields)  # fmt: skip
                created += 1
            elif changes.record(existing)["content"] != content:
                changes.update(existing, reason="the import added messages of this day", content=content, **fields)
                record_id, updated = existing, updated + 1
            else:
                skipped += 1
                continue
            written.append((record_id, row))
        if written:
            conn.execute(t.reflection_runs.insert().values(
                id=run_id, user_id=user_id, started_at=at, until=at, trigger="import", status="maintenance",
                report=t.plain({"run_id": run_id, "days": [d.isoformat() for d in days], "created": created,
                                "updated": updated}),
            ))  # fmt: skip
            records = memory.store.get_many(user_id, [i for i, _ in written])
            memory.index([records[i] for i, _ in written], vectors[[row for _, row in written]])
    return DaysDone(created, updated, skipped, run_id if written else None)


def _external_id(day: date) -> str:
    return f"import-day:{day.isoformat()}"


def _summary_id(conn: Connection, user_id: str, day: date) -> str | None:
    r = t.records.c
    query = select(r.id).where(r.user_id == user_id, r.external_id == _external_id(day))
    found = conn.execute(query.limit(1)).scalar()
    return None if found is None else str(found)


def _is_han(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)
