"""A person's own edit of a learnt record: a new version with the reason, never an untracked overwrite.

The edit is applied through a :class:`~tianma.storage.changes.ChangeSet`, so the prior content
stays in ``record_versions`` (reason ``edited by the user: …``) and the whole change is logged as
an undoable run (``undo_reflection(run_id)``), like an approval or a rollback.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from tianma.errors import InvalidInputError
from tianma.memory.service import Memory
from tianma.storage import schema as t
from tianma.storage.changes import ChangeSet
from tianma.storage.records import Kind
from tianma.storage.sql_store import map_sql_errors

EDITABLE_KINDS: frozenset[Kind] = frozenset({"fact", "preference", "experience", "strategy"})
"""What a person may edit: learnt records. Events are the raw log and signals are observations."""
EDIT_REASON = "edited by the user"
MAX_CONTENT = 4000
"""Longest content an edit may write (characters)."""


def edit_reason(reason: str) -> str:
    """The version reason of an edit: ``edited by the user`` plus the person's own words."""
    reason = " ".join(reason.split())
    return f"{EDIT_REASON}: {reason}" if reason else EDIT_REASON


def edit_record(memory: Memory, record_id: str, content: str, reason: str, at: datetime) -> dict[str, Any]:
    """Replace the content of a learnt record as a new version, then re-index it.

    Returns ``run_id`` (undoable), ``record_id``, ``version`` (the new one) and ``content``.

    Raises:
        RecordNotFoundError: no such record.
        InvalidInputError: the record is an event or a signal, or the content is empty, too long
            or unchanged.
    """
    content = content.strip()
    if not content:
        raise InvalidInputError("the new content is empty")
    if len(content) > MAX_CONTENT:
        raise InvalidInputError(f"the new content is longer than {MAX_CONTENT} characters")
    record = memory.store.get(record_id)
    if record.kind not in EDITABLE_KINDS:
        raise InvalidInputError(
            f"{record_id} is a {record.kind}; only {', '.join(sorted(EDITABLE_KINDS))} records can be edited"
        )
    if content == record.content:
        raise InvalidInputError("the new content is the same as the current one")
    run_id = str(uuid.uuid4())
    with map_sql_errors(), memory.store.tx.unit() as conn:
        changes = ChangeSet(conn, record.user_id, run_id, at)
        changes.update(record_id, reason=edit_reason(reason), content=content)
        # status "maintenance": undoable, and not a reflection (the reflection window is unaffected)
        conn.execute(
            t.reflection_runs.insert().values(
                id=run_id, user_id=record.user_id, started_at=at, until=at, trigger="edit",
                status="maintenance", report=t.plain({"run_id": run_id, "record_id": record_id}),
            )
        )  # fmt: skip
        memory.reindex(record.user_id, [record_id])
    return {"run_id": run_id, "record_id": record_id, "version": record.version + 1, "content": content}
