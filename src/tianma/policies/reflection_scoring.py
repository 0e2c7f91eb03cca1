"""The score step: support counted per record, statuses decided (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, tzinfo
from typing import Any

from tianma.policies.promotion import Support, decide, reinforce, start_confidence, status_after
from tianma.storage.records import MemoryRecord


def support_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``support`` bookkeeping kept in a learnt record's ``data``."""
    raw = dict(data.get("support") or {})
    return {
        "runs": list(raw.get("runs", [])),
        "events": list(raw.get("events", [])),
        "days": list(raw.get("days", [])),
        "reinforced": dict(raw.get("reinforced", {})),
    }


def score_plan(
    plan: Sequence[dict[str, Any]],
    existing: Mapping[str, MemoryRecord],
    days: Mapping[str, date],
    at: datetime,
    zone: tzinfo,
) -> list[dict[str, Any]]:
    """Each create/support item gets ``status``, ``confidence``, ``support`` and ``decision``.

    ``days`` are the local days (in ``zone``) of the events; the daily cap on reinforcements
    counts the local day of ``at``.
    """
    today = at.astimezone(zone).date().isoformat()
    superseding = {
        (i["proposal"]["kind"], i["proposal"]["content"])
        for i in plan
        if i["action"] == "supersede" and i["proposal"]
    }
    out = []
    for item in plan:
        item = dict(item)
        p = item["proposal"]
        if item["action"] == "create" and p is not None:
            events = list(dict.fromkeys(p["source_event_ids"]))
            event_days = sorted({days[e].isoformat() for e in events if e in days})
            sup: dict[str, Any] = {
                "runs": ["<this run>"],
                "events": events,
                "days": event_days,
                "reinforced": {},
            }
            conf = start_confidence(p["kind"], p.get("confidence"))
            decision = decide(p["kind"], Support(1, len(events), len(event_days), conf))
            # an explicit correction of a known record is written directly (seed 001 §2.3)
            corrects = (p["kind"], p["content"]) in superseding and p["kind"] != "strategy"
            status = "active" if corrects else decision.status
            item.update(status=status, confidence=conf, support=sup, decision=decision.reason)
        elif item["action"] == "support" and p is not None:
            record = existing[item["target_id"]]
            sup = support_of(record.data)
            new_events = [e for e in p["source_event_ids"] if e not in sup["events"]]
            conf = record.confidence
            if new_events:  # independent: this run brings evidence the record did not have
                sup["runs"].append("<this run>")
                sup["events"] += new_events
                sup["days"] = sorted(
                    set(sup["days"]) | {days[e].isoformat() for e in new_events if e in days}
                )
                count = int(sup["reinforced"].get(today, 0))
                conf = reinforce(conf, count)
                if conf != record.confidence:
                    sup["reinforced"][today] = count + 1
            decision = decide(
                record.kind, Support(len(sup["runs"]), len(sup["events"]), len(sup["days"]), conf)
            )
            item.update(status=status_after(decision, record.status), confidence=conf, support=sup,
                        decision=decision.reason, independent=bool(new_events))  # fmt: skip
        out.append(item)
    return out


PROMOTE_AFTER = 3
"""A semantic memory validated in this many consecutive dialogues becomes a structured fact."""


def promotions(existing: Iterable[MemoryRecord], streaks: Mapping[str, int]) -> list[dict[str, Any]]:
    """Plan items promoting active preferences/experiences validated in 3 consecutive dialogues."""
    return [
        {"action": "promote", "proposal": None, "target_id": r.id, "evidence": [],
         "reason": f"{r.kind} promoted to fact: validated in {streaks[r.id]} consecutive dialogues, no negative signal",
         "key": r.key or f"note.{r.kind}.{r.id[:8]}"}
        for r in existing
        if r.kind in ("preference", "experience") and r.status == "active" and streaks.get(r.id, 0) >= PROMOTE_AFTER
    ]  # fmt: skip
