"""The weekly behaviour review: a week of dialogues → statistics → proposals.

The statistics are pure (:mod:`tianma.policies.behaviour`); this module reads each user's
week from SQL and queues what the statistics justify. A proposal is a behaviour strategy, so
it is never applied here: it is written like a reflection's queued strategy candidate — a
``pending`` strategy record plus a pending review with a before/after preview, zone and mode
from :mod:`tianma.guardrails.zones` — and ``tianma review approve ID`` (``Runtime.approve``)
activates it. Each week's writes are one undoable run (status ``maintenance``, so the nightly
reflection window is unaffected). A proposal whose text is already waiting in the review queue
or already an active strategy is not queued again, so re-running a week (or a pattern that
lasts for weeks) adds nothing.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, tzinfo
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from tianma.guardrails.constitution import Constitution
from tianma.guardrails.zones import classify, mode_for
from tianma.memory.reflection_store import STRATEGY_DEFAULT_ZONE
from tianma.memory.reviews import preview, queue
from tianma.memory.service import Memory
from tianma.policies.behaviour import Proposal, Signal, Turn, Week, analyse
from tianma.settings import describe_zone
from tianma.storage import schema as t
from tianma.storage.changes import ChangeSet
from tianma.storage.records import Provenance
from tianma.storage.schema import as_aware
from tianma.storage.sql_store import map_sql_errors

WINDOW = timedelta(days=7)
ORIGIN = "weekly_review"
TRIGGER = "weekly_review"


def weekly_review(
    memory: Memory, constitution: Constitution, user_id: str | None = None, at: datetime | None = None,
    *, zone: tzinfo,
) -> list[dict[str, Any]]:  # fmt: skip
    """Review the week before ``at`` for one user or every user with turns that week.

    Returns one report per such user: its topics with their statistics, the hour pattern (local
    hours of ``zone``, the users' time zone, named under ``timezone``), and each proposal with
    its review id (``status`` ``queued``; ``already_open`` when the same text is already waiting
    for review, ``already_active`` when it is an active strategy).
    """
    when = as_aware(at)
    users = [user_id] if user_id is not None else memory.store.users()
    reports = [review_user(memory, constitution, uid, when, zone) for uid in users]
    return [r for r in reports if r["turns"]]


def review_user(
    memory: Memory, constitution: Constitution, user_id: str, at: datetime, zone: tzinfo
) -> dict[str, Any]:
    """One user's weekly review (see :func:`weekly_review`)."""
    since = at - WINDOW
    turns, signals = _week(memory, user_id, since, at)
    week = analyse(turns, signals, zone)
    report: dict[str, Any] = {
        "user_id": user_id, "since": since.isoformat(), "until": at.isoformat(), "turns": len(turns),
        "dialogues": len({x.dialogue_id for x in turns}), "language": "zh" if week.chinese else "en",
        "topics": [{k: v for k, v in s.items() if k != "repeat_evidence"} for s in week.topics],
        "hours": week.hours, "timezone": describe_zone(zone), "late": week.late, "proposals": [], "run_id": None,
    }  # fmt: skip
    if week.proposals:
        report["run_id"], report["proposals"] = _queue(memory, constitution, user_id, at, week)
    return report


def _week(memory: Memory, user_id: str, since: datetime, until: datetime) -> tuple[list[Turn], list[Signal]]:
    r = t.records.c
    events = select(r.id, r.dialogue_id, r.content, r.at).where(
        r.user_id == user_id, r.kind == "event", r.role == "user", r.at > since, r.at <= until
    )
    sigs = select(r.dialogue_id, r.data, r.provenance).where(
        r.user_id == user_id, r.kind == "signal", r.created_at > since, r.created_at <= until
    )
    with map_sql_errors(), memory.store.tx.connect() as conn:
        turns = [Turn(x.id, x.dialogue_id or "", x.content, as_aware(x.at)) for x in conn.execute(events)]
        rows = conn.execute(sigs).all()
    dialogue_of = {x.event_id: x.dialogue_id for x in turns}
    signals = []
    for row in rows:
        data = row.data or {}
        target = str(data.get("target_event_id") or "")
        dialogue = row.dialogue_id or dialogue_of.get(target)
        if dialogue:
            signals.append(Signal(str(data.get("type", "")), dialogue,
                                  tuple(Provenance.from_json(row.provenance).event_ids), target))  # fmt: skip
    return turns, signals


def _queue(
    memory: Memory, constitution: Constitution, user_id: str, at: datetime, week: Week
) -> tuple[str | None, list[dict[str, Any]]]:
    """Write the new proposals as one run; returns its id (``None``: nothing new) and the outcomes."""
    run_id = str(uuid.uuid4())
    out: list[dict[str, Any]] = []
    with map_sql_errors(), memory.store.tx.unit() as conn:
        changes = ChangeSet(conn, user_id, run_id, at)
        taken = _taken(conn, user_id)
        active = _active_strategies(conn, user_id)
        for p in week.proposals:
            zone, term = classify(p.content, constitution)
            if zone == "free":  # a behaviour strategy changes style or order: at least caution
                zone, term = STRATEGY_DEFAULT_ZONE, ""
            mode = mode_for("strategy", zone, p.scope)
            if mode == "auto":  # a weekly proposal always waits for one confirmation
                mode = "confirm"
            entry = {"content": p.content, "topic": p.topic, "scope": p.scope, "zone": zone, "mode": mode,
                     "reason": p.reason, "trigger": p.trigger}  # fmt: skip
            if p.content in taken:
                known = taken[p.content]
                out.append({**entry, "status": "already_open" if known else "already_active",
                            "review_id": known, "record_id": None})  # fmt: skip
                continue
            reason = f"{zone} zone" + (f" (mentions “{term}”)" if term else "") + f"; {p.reason}"
            record_id, review_id = _write(conn, changes, p, zone, mode, reason, active, at)
            taken[p.content] = review_id
            out.append({**entry, "status": "queued", "review_id": review_id, "record_id": record_id})
        if not changes.touched:
            return None, out
        conn.execute(
            t.reflection_runs.insert().values(
                id=run_id, user_id=user_id, started_at=at, until=at, trigger=TRIGGER, status="maintenance",
                report=t.plain({"run_id": run_id, "proposals": out}),
            )
        )  # fmt: skip
        memory.reindex(user_id, changes.touched)
    return run_id, out


def _write(
    conn: Connection, changes: ChangeSet, p: Proposal, zone: str, mode: str, reason: str,
    active: list[dict[str, Any]], at: datetime,
) -> tuple[str, str]:  # fmt: skip
    """A pending strategy record and its review, as a reflection queues a caution-zone candidate."""
    guard = {"outcome": "queued", "zone": zone, "mode": mode, "reason": reason}
    data = {"trigger": p.trigger, "priority": 0, "weight": 0.5, "zone": zone, "origin": ORIGIN, "guard": guard,
            "polarity": None, "support": {"runs": [changes.run_id], "weekly_review": at.isoformat()}}  # fmt: skip
    prov = Provenance(event_ids=p.evidence, reflection_ids=(changes.run_id,), source=f"reflection:{ORIGIN}")
    record_id = changes.create("strategy", p.content, prov, scope=p.scope, confidence=0.5, status="pending",
                               data=data)  # fmt: skip
    proposal = {"kind": "strategy", "content": p.content, "scope": p.scope, "key": None}
    review_id = queue(conn, user_id=changes.user_id, record_id=record_id, run_id=changes.run_id, kind="strategy",
                      content=p.content, zone=zone, mode=mode, reason=reason, preview=preview(proposal, active),
                      evidence=p.evidence, at=at)  # fmt: skip
    return record_id, review_id


def _taken(conn: Connection, user_id: str) -> dict[str, str | None]:
    """Strategy texts already waiting for review (→ its review id) or already active (→ ``None``)."""
    v = t.reviews.c
    pending = conn.execute(
        select(v.content, v.id).where(v.user_id == user_id, v.status == "pending", v.kind == "strategy")
    ).all()
    out: dict[str, str | None] = {r["content"]: None for r in _active_strategies(conn, user_id)}
    out.update({str(content): str(review_id) for content, review_id in pending})
    return out


def _active_strategies(conn: Connection, user_id: str) -> list[dict[str, Any]]:
    r = t.records.c
    query = select(r.content, r.scope, r.key).where(
        r.user_id == user_id, r.kind == "strategy", r.status == "active"
    )
    return [{"kind": "strategy", "status": "active", "content": str(x.content), "scope": str(x.scope),
             "key": x.key} for x in conn.execute(query)]  # fmt: skip
