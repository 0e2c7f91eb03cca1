"""Statements the reflection model says a later message superseded — the changes of mind the
closing rules of :mod:`tianma.memory.statements` cannot see.

The rules close an earlier statement when a newer one is about the same subject by closeness of
their e5 vectors, a shared subject label or facet, or the same extracted key; e5-small cannot
tell every change of mind (“I'm a Linux man: apt, not .exe” · “Bought a MacBook Air last
weekend, the kids took over the old laptop” score 0.23), so such a statement stayed resident
until the user said the new wish again. When a reflection calls the model anyway, the prompt
lists the user's lasting statements that still hold and asks which of them a later message (of the
window, or another of those listed: a window the model did not see, its budget spent, may hold
the change) changes, negates or replaces (``superseded_statements``); each answer is checked against
what was shown before anything is closed:

- the statement must be one of those listed (a current lasting statement of this user);
- the closer must be a lasting statement of the window or one of those listed, said after it;
- at most :data:`MAX_CLOSES` per run, the first answer per statement.

A statement so closed is closed like one the rules closed (``revised``, at the closer's time, by
it): it stays in the log, leaves the prompt, and what was learnt only from it lapses at the next
reflection. The model never closes anything when it is not called or its answer is broken (the
learning benchmark's case): then only the rules close.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tianma.llm.reflection_schema import SupersededStatement
from tianma.memory.statements import current_lasting
from tianma.storage.schema import as_aware
from tianma.storage.sql_store import SqlMemoryStore

STANDING_LIMIT = 30
"""Statements that still hold shown to the model, newest first."""
MAX_CLOSES = 5
"""Statements one reflection may close on the model's word."""


def is_lasting(event: Mapping[str, Any]) -> bool:
    """A message of the reflection window that is a lasting statement (a statement, not scoped in time)."""
    return bool(event.get("statement")) and not event["statement"].get("period")


def standing_statements(store: SqlMemoryStore, user_id: str, at: datetime) -> list[dict[str, Any]]:
    """The user's lasting statements that hold at ``at`` (newest :data:`STANDING_LIMIT`), as the
    reflection prompt shows them: id, when, text."""
    lasting = [r for r in current_lasting(store, user_id, at) if r.at is not None]
    return [{"id": r.id, "at": r.at, "text": r.content} for r in lasting[:STANDING_LIMIT]]


def checked_closes(
    answers: Sequence[SupersededStatement], standing: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The model's answers that hold up (module text): statement id, closer id, closer's time, the
    statement's text."""
    shown = {s["id"]: s for s in standing}
    closers = {e["id"]: e for e in events if is_lasting(e)}
    closers |= shown  # a later statement that still holds, said in an earlier window
    out: list[dict[str, Any]] = []
    for answer in answers:
        old, new = shown.get(answer.statement_id), closers.get(answer.by_event_id)
        if old is None or new is None or any(c["statement_id"] == old["id"] for c in out):
            continue
        if as_aware(new["at"]) <= as_aware(old["at"]):
            continue  # a message cannot supersede what was said after it
        out.append({"statement_id": old["id"], "by_event_id": new["id"], "at": new["at"], "text": old["text"]})
        if len(out) == MAX_CLOSES:
            break
    return out


def close_on_model_word(store: SqlMemoryStore, user_id: str, close: Mapping[str, Any], run_id: str) -> bool:
    """Close one checked statement, if still open, in reflection run ``run_id`` (whose undo reopens
    it); whether it was closed now."""
    sid = close["statement_id"]
    return bool(store.end_validity(user_id, [sid], close["at"], by=close["by_event_id"], how={sid: "revised"},
                                   run_id=run_id))  # fmt: skip
