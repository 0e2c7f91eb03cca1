"""Feedback aggregation (seed 001 §2.3/§3.3): signals are aggregated,
then archived, every 6 h.

"Signals: rather weak than wrong": a signal below ``WRITE_THRESHOLD`` (0.5) never writes on its
own, it is only counted. Two or more weak signals of one polarity in one dialogue merge into
one signal of 0.7 (negative) or 0.8 (positive), which is credited like an explicit one.

A turn already merges as each signal arrives (``tianma.memory.feedback.apply_signal``); this
periodic pass runs the same merge (through ``apply_signal``, so there is one implementation)
for every dialogue that still holds unmerged weak signals — signals stored without being
applied, or by a turn that failed half-way — and then archives every signal it has looked at.

Archived means ``data["archived_at"]`` (the ISO time of the pass) on the signal: the record
statuses all mean something else for learnt records (``inactive`` is "decayed, restorable"),
and no reader of signals filters on status. An archived signal is never counted by this pass
again, so a second pass over the same data creates and changes nothing. It stays in SQL and
still counts wherever signals are history (reflection triggers, validated streaks, the weekly
review); merging is governed, as in turns, by ``data["merged_into"]``: an archived weak signal
that was never merged can still merge with a later weak one of the same dialogue, once.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select, update

from tianma.memory.feedback import apply_signal
from tianma.memory.service import Memory
from tianma.policies.credit import polarity, writes_alone
from tianma.storage import schema as t
from tianma.storage.records import MemoryRecord
from tianma.storage.sql_store import map_sql_errors

ARCHIVED_AT = "archived_at"
"""Key in a signal's ``data``: when a feedback-aggregation pass archived it."""


def is_archived(signal: MemoryRecord) -> bool:
    """Whether a feedback-aggregation pass has already counted (and archived) this signal."""
    return bool(signal.data.get(ARCHIVED_AT))


def _mergeable(signal: MemoryRecord) -> bool:
    """A weak, unmerged signal with a direction, in a dialogue: what a merge may use."""
    return (
        signal.dialogue_id is not None
        and not writes_alone(signal.confidence)
        and not signal.data.get("merged_into")
        and polarity(str(signal.data.get("type"))) != 0
    )


def _pending(user_id: str | None, until: datetime) -> Select[tuple[str, str]]:
    """``(id, user_id)`` of the signals recorded up to ``until`` and not archived, oldest first."""
    r = t.records.c
    query = (
        select(r.id, r.user_id)
        .where(
            r.kind == "signal", r.created_at <= t.as_aware(until), r.data[ARCHIVED_AT].as_string().is_(None)
        )
        .order_by(r.created_at, r.id)
    )
    return query if user_id is None else query.where(r.user_id == user_id)


def pending_signals(memory: Memory, user_id: str, until: datetime) -> list[MemoryRecord]:
    """The user's signals recorded up to ``until`` and not archived yet, oldest first."""
    with map_sql_errors(), memory.store.tx.connect() as conn:
        ids = [row.id for row in conn.execute(_pending(user_id, until))]
    found = memory.store.get_many(user_id, ids)
    return [found[i] for i in ids if i in found]


def pending_users(memory: Memory, until: datetime) -> list[str]:
    """Users with signals recorded up to ``until`` and not archived yet, in order of id."""
    with map_sql_errors(), memory.store.tx.connect() as conn:
        return sorted({row.user_id for row in conn.execute(_pending(None, until))})


def aggregate_signals(memory: Memory, user_id: str, at: datetime) -> dict[str, Any]:
    """One aggregation pass over a user's signals not yet archived (recorded up to ``at``).

    Per dialogue, weak signals of one polarity seen at least twice become one merged signal,
    credited at once (``apply_signal``); then every signal looked at, merged ones included, is
    archived.

    Returns a report: ``seen`` (signals looked at), ``weak`` (of them, below the write
    threshold), ``weak_by_type``, ``merged`` (ids of the merged signals created), ``credited``
    (record id → new confidence) and ``archived`` (signals marked).
    """
    at = t.as_aware(at)
    signals = pending_signals(memory, user_id, at)
    weak = [s for s in signals if not writes_alone(s.confidence)]
    probes: dict[str, MemoryRecord] = {}
    for s in weak:
        if _mergeable(s) and s.dialogue_id is not None:
            probes.setdefault(s.dialogue_id, s)
    merged: list[str] = []
    credited: dict[str, float] = {}
    for probe in probes.values():
        while (done := apply_signal(memory, probe, at))["merged"] is not None:  # one polarity a call
            merged.append(str(done["merged"]))
            credited.update(done["credited"])
    archived = _archive(memory, user_id, [s.id for s in signals], merged, at)
    return {
        "user_id": user_id,
        "seen": len(signals),
        "weak": len(weak),
        "weak_by_type": dict(Counter(str(s.data.get("type")) for s in weak)),
        "merged": merged,
        "credited": credited,
        "archived": archived,
    }


def aggregate_all(memory: Memory, at: datetime, user_id: str | None = None) -> list[dict[str, Any]]:
    """``aggregate_signals`` for every user with signals to archive (or for one user)."""
    at = t.as_aware(at)
    users = [user_id] if user_id is not None else pending_users(memory, at)
    return [aggregate_signals(memory, uid, at) for uid in users]


def _archive(memory: Memory, user_id: str, seen: list[str], merged: list[str], at: datetime) -> int:
    """Mark the signals seen, and the merged ones created, as archived; returns how many.

    Reads each row again inside the transaction: the merge has just written ``merged_into``.
    """
    ids = [*seen, *merged]
    if not ids:
        return 0
    new = set(merged)
    stamp = at.isoformat()
    marked = 0
    with map_sql_errors(), memory.store.tx.begin() as conn:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = conn.execute(select(t.records.c.id, t.records.c.user_id, t.records.c.data)
                                .where(t.records.c.id.in_(chunk))).all()  # fmt: skip
            for row in rows:
                if row.user_id != user_id:
                    continue
                data = {**(row.data or {}), ARCHIVED_AT: stamp}
                if row.id in new:
                    parts = len(data.get("merged", []))
                    data["detail"] = (
                        f"aggregated: {parts} weak signals of one dialogue merged by feedback aggregation"
                    )
                    data["aggregated_at"] = stamp
                conn.execute(update(t.records).where(t.records.c.id == row.id).values(data=data))
                marked += 1
    return marked
