"""Versioned, logged, undoable changes to records: what a reflection run publishes.

Every change made through a :class:`ChangeSet` happens inside one transaction, keeps the
record's previous state (a ``record_versions`` row with reason and evidence), and is logged
with the whole prior row in ``run_changes`` so that :func:`undo_run` can restore the exact
prior state in one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from tianma.errors import InvalidInputError, RecordNotFoundError
from tianma.storage import schema as t
from tianma.storage.records import Kind, Provenance, Status
from tianma.storage.sql_store import new_id

_NEW_ROW_DEFAULTS: dict[str, Any] = {
    "key": None, "scope": "global", "tags": [], "confidence": 0.5, "importance": 0.5, "hit_count": 0,
    "last_hit_at": None, "status": "active", "version": 1, "data": {}, "dialogue_id": None,
    "role": None, "speaker": None, "reply": None, "at": None, "external_id": None, "error": None,
    "valid_until": None,
}  # fmt: skip


class ChangeSet:
    """The changes of one reflection run, applied on an open transaction ``conn``."""

    def __init__(self, conn: Connection, user_id: str, run_id: str, at: datetime) -> None:
        self._conn = conn
        self.user_id = user_id
        self.run_id = run_id
        self.at = at
        self._seq = 0
        self.touched: list[str] = []
        """Ids of every record created or changed, in order (to re-index after commit)."""

    def _log(self, record_id: str, action: str, before: dict[str, Any] | None) -> None:
        self._conn.execute(
            t.run_changes.insert().values(
                run_id=self.run_id, seq=self._seq, user_id=self.user_id, record_id=record_id,
                action=action, before=t.plain(before),
            )
        )  # fmt: skip
        self._seq += 1
        if record_id not in self.touched:
            self.touched.append(record_id)

    def record(self, record_id: str) -> dict[str, Any]:
        """The current row of one of the user's records."""
        return self._row(record_id)

    def _row(self, record_id: str) -> dict[str, Any]:
        row = self._conn.execute(select(t.records).where(t.records.c.id == record_id)).first()
        if row is None or row.user_id != self.user_id:
            raise RecordNotFoundError(f"no record {record_id} for user {self.user_id}")
        return t.row_dict(row)

    def create(self, kind: Kind, content: str, provenance: Provenance, **fields: Any) -> str:
        """Add a record; returns its id."""
        record_id = new_id()
        row = {**_NEW_ROW_DEFAULTS, "valid_from": self.at, **fields}
        row.update(id=record_id, user_id=self.user_id, kind=kind, content=content,
                   created_at=self.at, updated_at=self.at, provenance=provenance.to_json())  # fmt: skip
        row["tags"] = list(row["tags"])
        self._conn.execute(t.records.insert().values(**row))
        self._log(record_id, "create", None)
        return record_id

    def update(self, record_id: str, *, reason: str, evidence: Sequence[str] = (), **fields: Any) -> None:
        """Change a record, keeping its previous version with the reason and evidence."""
        before = self._row(record_id)
        allowed = {
            "kind",
            "content",
            "confidence",
            "importance",
            "status",
            "data",
            "provenance",
            "key",
            "scope",
            "tags",
            "valid_from",
            "valid_until",
        }
        if set(fields) - allowed:
            raise InvalidInputError(f"cannot change {sorted(set(fields) - allowed)} of a record")
        self._conn.execute(
            t.record_versions.insert().values(
                record_id=record_id, version=before["version"], user_id=self.user_id,
                content=before["content"], confidence=before["confidence"], status=before["status"],
                data=before["data"], changed_at=self.at, reason=reason, evidence=list(evidence),
                run_id=self.run_id,
            )
        )  # fmt: skip
        values = {**fields, "version": before["version"] + 1, "updated_at": self.at}
        if "tags" in values:
            values["tags"] = list(values["tags"])
        self._conn.execute(update(t.records).where(t.records.c.id == record_id).values(**values))
        self._log(record_id, "update", before)

    def set_status(
        self, record_id: str, status: Status, *, reason: str, evidence: Sequence[str] = ()
    ) -> None:
        """Change only the status (activate, deprecate, disable …)."""
        self.update(record_id, reason=reason, evidence=evidence, status=status)

    def supersede(self, old_id: str, new_id_: str | None, *, reason: str, evidence: Sequence[str]) -> None:
        """Deprecate ``old_id`` in favour of ``new_id_`` with a replace-log row; its validity
        ends now (or earlier, when a newer statement had already closed it)."""
        until = self._row(old_id)["valid_until"]
        until = self.at if until is None else min(until, self.at)
        self.update(old_id, reason=reason, evidence=evidence, status="deprecated", valid_until=until)
        self._conn.execute(
            t.replace_log.insert().values(
                user_id=self.user_id, old_id=old_id, new_id=new_id_, reason=reason,
                evidence=list(evidence), at=self.at, run_id=self.run_id,
            )
        )  # fmt: skip


def undo_run(conn: Connection, run_id: str) -> list[str]:
    """Restore every record a run touched to its state before the run; returns their ids.

    Records the run created are deleted; changed ones get their whole prior row back; the
    version and replace-log rows the run wrote are removed, so the tables read as before.

    Raises:
        RecordNotFoundError: no such run.
        InvalidInputError: the run was already undone or never published.
    """
    run = conn.execute(select(t.reflection_runs).where(t.reflection_runs.c.id == run_id)).first()
    if run is None:
        raise RecordNotFoundError(f"no reflection run {run_id}")
    if run.status not in ("published", "maintenance"):
        raise InvalidInputError(
            f"run {run_id} is {run.status}; only a published or maintenance run can be undone"
        )
    changes = conn.execute(
        select(t.run_changes).where(t.run_changes.c.run_id == run_id).order_by(t.run_changes.c.seq.desc())
    ).all()
    for change in changes:
        if change.action == "create":
            conn.execute(delete(t.records).where(t.records.c.id == change.record_id))
        else:
            conn.execute(
                update(t.records).where(t.records.c.id == change.record_id).values(**_restored(change.before))
            )
    conn.execute(delete(t.record_versions).where(t.record_versions.c.run_id == run_id))
    conn.execute(delete(t.replace_log).where(t.replace_log.c.run_id == run_id))
    conn.execute(delete(t.reviews).where(t.reviews.c.run_id == run_id))  # what the run queued
    conn.execute(
        update(t.reviews)
        .where(t.reviews.c.decided_run == run_id)
        .values(status="pending", decided_at=None, decision=None, decided_run=None)
    )  # a decision the run applied is open again
    conn.execute(update(t.reflection_runs).where(t.reflection_runs.c.id == run_id).values(status="undone"))
    return list(dict.fromkeys(c.record_id for c in changes))


def _restored(before: dict[str, Any]) -> dict[str, Any]:
    out = dict(before)
    for name in ("created_at", "updated_at", "last_hit_at", "at", "valid_from", "valid_until"):
        if out.get(name) is not None:
            out[name] = datetime.fromisoformat(out[name])
    out.pop("id", None)
    return out
