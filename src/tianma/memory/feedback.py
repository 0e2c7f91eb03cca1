"""Signals change memory: credit strong ones to what the judged turn injected; merge weak ones."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import update

from tianma.memory.service import Memory
from tianma.policies.credit import credited_confidence, merge_weak, polarity, writes_alone
from tianma.storage import schema as t
from tianma.storage.records import MemoryRecord, Provenance
from tianma.storage.sql_store import map_sql_errors

CREDITED_KINDS = frozenset({"fact", "preference", "experience", "strategy"})
"""Events are the raw log: their confidence is not learnt."""


def apply_signal(memory: Memory, signal: MemoryRecord, at: datetime) -> dict[str, Any]:
    """Credit a signal that may write; otherwise try merging the dialogue's weak signals.

    Returns what happened: ``credited`` ids with their new confidence, and ``merged`` signal ids.
    """
    if writes_alone(signal.confidence):
        return {"credited": _credit(memory, signal), "merged": None}
    weak = [
        s for s in memory.store.signals_of_dialogue(signal.user_id, signal.dialogue_id)
        if not writes_alone(s.confidence) and not s.data.get("merged_into") and polarity(str(s.data.get("type"))) != 0
    ]  # fmt: skip
    for merge in merge_weak([(s.id, str(s.data["type"])) for s in weak]):
        parts = [s for s in weak if s.id in merge.signal_ids]
        credited = list(dict.fromkeys(c for s in parts for c in s.data.get("credited", [])))
        events = tuple(dict.fromkeys(e for s in parts for e in s.provenance.event_ids))
        merged = memory.store.add_record(
            signal.user_id, "signal", f"{len(parts)} weak signals merged",
            Provenance(event_ids=events, dialogue_ids=(signal.dialogue_id,) if signal.dialogue_id else (),
                       source="signal-merge"),
            at=at, confidence=merge.confidence, dialogue_id=signal.dialogue_id,
            data={"type": "merged_positive" if merge.polarity > 0 else "merged_negative",
                  "polarity": merge.polarity, "credited": credited, "merged": list(merge.signal_ids)},
        )  # fmt: skip
        with map_sql_errors(), memory.store.tx.begin() as conn:
            for part in parts:
                conn.execute(
                    update(t.records).where(t.records.c.id == part.id)
                    .values(data={**part.data, "merged_into": merged.id})
                )  # fmt: skip
        return {"credited": _credit(memory, merged), "merged": merged.id}
    return {"credited": {}, "merged": None}


def _credit(memory: Memory, signal: MemoryRecord) -> dict[str, float]:
    sign_type = str(signal.data.get("type"))
    targets = memory.store.get_many(signal.user_id, list(signal.data.get("credited", [])))
    moved = {}
    with map_sql_errors(), memory.store.tx.begin() as conn:
        for record in targets.values():
            if record.kind not in CREDITED_KINDS:
                continue
            new = credited_confidence(record.confidence, sign_type, signal.confidence)
            if new != record.confidence:
                conn.execute(update(t.records).where(t.records.c.id == record.id).values(confidence=new))
                moved[record.id] = new
    return moved
