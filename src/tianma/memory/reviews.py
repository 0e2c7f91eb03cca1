"""The review queue: learnt changes that wait for a human, and the decisions taken on them.

A queued change is a record kept ``pending`` (never injected) with a ``reviews`` row saying
why it waits (zone, circuit breaker, scope, regression gate) and what it would change.
Approving activates it, rejecting disables it, rolling back restores an earlier version: each
decision is a versioned, undoable run (``undo_reflection(run_id)``), like a reflection.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from tianma.errors import InvalidInputError, RecordNotFoundError
from tianma.memory.service import Memory
from tianma.storage import schema as t
from tianma.storage.changes import ChangeSet
from tianma.storage.protocols import MemoryStore
from tianma.storage.records import Status
from tianma.storage.sql_store import map_sql_errors


def preview(proposal: dict[str, Any], existing: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Before/after of a queued change: the active records of the same kind and key (or, without
    a key, the same scene), without and with the proposal's content."""
    key = proposal.get("key")
    same = [r["content"] for r in existing
            if r["kind"] == proposal["kind"] and r["status"] == "active"
            and ((key and r.get("key") == key) or (not key and r.get("scope") == proposal["scope"]))]  # fmt: skip
    return {"before": same, "after": [*same, proposal["content"]], "scope": proposal["scope"]}


def queue(
    conn: Connection, *, user_id: str, record_id: str | None, run_id: str | None, kind: str, content: str,
    zone: str, mode: str, reason: str, preview: dict[str, Any], evidence: Sequence[str], at: datetime,
    status: str = "pending",
) -> str:  # fmt: skip
    """Add a review row on an open transaction; returns its id.

    ``status="rejected"`` records a candidate rejected unwritten (content filter, injection),
    so the reason stays visible.
    """
    review_id = str(uuid.uuid4())
    conn.execute(
        t.reviews.insert().values(
            id=review_id, user_id=user_id, record_id=record_id, run_id=run_id, kind=kind, content=content,
            zone=zone, mode=mode, reason=reason, status=status, preview=t.plain(preview),
            evidence=list(evidence), created_at=at, decided_at=at if status != "pending" else None,
            decision=reason if status != "pending" else None,
        )
    )  # fmt: skip
    return review_id


def open_review_ids(store: MemoryStore, user_id: str) -> dict[str, str]:
    """Record id → id of its open review, for the user's queued records."""
    v = t.reviews.c
    query = select(v.record_id, v.id).where(
        v.user_id == user_id, v.status == "pending", v.record_id.is_not(None)
    )
    with map_sql_errors(), store.tx.connect() as conn:
        return {str(rid): str(review) for rid, review in conn.execute(query)}


def list_reviews(
    store: MemoryStore, user_id: str | None = None, status: str | None = "pending"
) -> list[dict[str, Any]]:
    """Reviews, oldest first, optionally of one user and one status."""
    v = t.reviews.c
    query = select(t.reviews).order_by(v.created_at, v.id)
    if user_id is not None:
        query = query.where(v.user_id == user_id)
    if status is not None:
        query = query.where(v.status == status)
    with map_sql_errors(), store.tx.connect() as conn:
        return [t.row_dict(r) for r in conn.execute(query)]


def get_review(store: MemoryStore, review_id: str) -> dict[str, Any]:
    """One review.

    Raises:
        RecordNotFoundError: no such review.
    """
    with map_sql_errors(), store.tx.connect() as conn:
        row = conn.execute(select(t.reviews).where(t.reviews.c.id == review_id)).first()
    if row is None:
        raise RecordNotFoundError(f"no review {review_id}")
    return t.row_dict(row)


def decide(memory: Memory, review_id: str, approve: bool, reason: str, at: datetime) -> dict[str, Any]:
    """Approve (activate) or reject (disable) a queued change, as one undoable run.

    Raises:
        RecordNotFoundError: no such review.
        InvalidInputError: the review was already decided.
    """
    review = get_review(memory.store, review_id)
    if review["status"] != "pending":
        raise InvalidInputError(f"review {review_id} is already {review['status']}")
    status: Status = "active" if approve else "disabled"
    verdict = "approved" if approve else "rejected"
    run_id = str(uuid.uuid4())
    user_id = review["user_id"]
    with map_sql_errors(), memory.store.tx.unit() as conn:
        changes = ChangeSet(conn, user_id, run_id, at)
        if review["record_id"] is not None:
            row = changes.record(review["record_id"])
            data = {k: v for k, v in row["data"].items() if k != "review"}
            changes.update(review["record_id"], reason=f"{verdict} by a human: {reason}".rstrip(": "),
                           evidence=review["evidence"], status=status, data=data)  # fmt: skip
        conn.execute(
            update(t.reviews).where(t.reviews.c.id == review_id)
            .values(status=verdict, decided_at=at, decision=reason or verdict, decided_run=run_id)
        )  # fmt: skip
        _log_run(
            conn, run_id, user_id, at, verdict, {"review_id": review_id, "record_id": review["record_id"]}
        )
        memory.reindex(user_id, changes.touched)
    return {**get_review(memory.store, review_id), "run_id": run_id}


def rollback(memory: Memory, record_id: str, version: int | None, at: datetime) -> dict[str, Any]:
    """Restore a record's content, confidence, status and data as of ``version`` (default: the
    previous one), as a new version; undoable.

    Raises:
        RecordNotFoundError: no such record or version.
        InvalidInputError: the record has no earlier version.
    """
    record = memory.store.get(record_id)
    v = t.record_versions.c
    query = select(t.record_versions).where(v.record_id == record_id).order_by(v.version.desc())
    with map_sql_errors(), memory.store.tx.connect() as conn:
        versions = [t.row_dict(r) for r in conn.execute(query)]
    if not versions:
        raise InvalidInputError(f"record {record_id} has no earlier version to roll back to")
    target = versions[0] if version is None else next((x for x in versions if x["version"] == version), None)
    if target is None:
        known = ", ".join(str(x["version"]) for x in reversed(versions))
        raise RecordNotFoundError(f"record {record_id} has no version {version} (earlier versions: {known})")
    run_id = str(uuid.uuid4())
    with map_sql_errors(), memory.store.tx.unit() as conn:
        changes = ChangeSet(conn, record.user_id, run_id, at)
        changes.update(record_id, reason=f"rolled back to version {target['version']}",
                       content=target["content"], confidence=target["confidence"],
                       status=target["status"], data=target["data"])  # fmt: skip
        _log_run(
            conn, run_id, record.user_id, at, "rollback", {"record_id": record_id, "to": target["version"]}
        )
        memory.reindex(record.user_id, [record_id])
    return {"run_id": run_id, "record_id": record_id, "restored_version": target["version"],
            "version": record.version + 1}  # fmt: skip


def _log_run(
    conn: Connection, run_id: str, user_id: str, at: datetime, trigger: str, report: dict[str, Any]
) -> None:
    # status "maintenance": undoable, and not a reflection (the reflection window is unaffected)
    conn.execute(
        t.reflection_runs.insert().values(
            id=run_id, user_id=user_id, started_at=at, until=at, trigger=trigger, status="maintenance",
            report=t.plain({"run_id": run_id, **report}),
        )
    )  # fmt: skip
