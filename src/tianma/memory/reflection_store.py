"""Reflection runs in SQL: the window to reflect on, and publishing a scored plan atomically."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.engine import Connection

from tianma.guardrails.zones import Zone
from tianma.memory.model_closes import close_on_model_word
from tianma.memory.reviews import queue
from tianma.memory.service import Memory
from tianma.policies.credit import NEGATIVE
from tianma.settings import LearningSettings
from tianma.storage import schema as t
from tianma.storage.changes import ChangeSet, undo_run
from tianma.storage.protocols import MemoryStore
from tianma.storage.records import Kind, Provenance
from tianma.storage.sql_store import SqlMemoryStore, map_sql_errors

STRATEGY_DEFAULT_ZONE: Zone = "caution"
"""Learnt strategies change behaviour (style, depth, order): the caution zone
until the guardrails classify them."""
WINDOW_LIMIT = 200
"""At most this many messages per reflection (the newest)."""


def last_reflected_until(store: SqlMemoryStore, user_id: str) -> datetime | None:
    """Where the last published reflection of the user stopped."""
    query = (
        select(t.reflection_runs.c.until)
        .where(t.reflection_runs.c.user_id == user_id, t.reflection_runs.c.status == "published")
        .order_by(t.reflection_runs.c.until.desc())
        .limit(1)
    )
    with map_sql_errors(), store.tx.connect() as conn:
        return conn.execute(query).scalar()


def messages_since_model_call(store: SqlMemoryStore, user_id: str, at: datetime) -> tuple[int, int]:
    """User messages since the last reflection of the user that called the chat model, and how
    many attempts that call took (0: the model was never called)."""
    runs = select(t.reflection_runs.c.until, t.reflection_runs.c.report).where(
        t.reflection_runs.c.user_id == user_id, t.reflection_runs.c.status == "published"
    )
    r = t.records.c
    with map_sql_errors(), store.tx.connect() as conn:
        rows = conn.execute(runs.order_by(t.reflection_runs.c.started_at.desc()).limit(500)).all()
        last = next((row for row in rows if ((row.report or {}).get("llm") or {}).get("called")), None)
        count = select(func.count()).where(r.user_id == user_id, r.kind == "event", r.role == "user", r.at <= at)
        if last is None:
            return int(conn.execute(count).scalar_one()), 0
        attempts = int(((last.report or {}).get("llm") or {}).get("attempts") or 1)
        return int(conn.execute(count.where(r.at > last.until)).scalar_one()), attempts


def window_signals(store: SqlMemoryStore, user_id: str, since: datetime | None) -> dict[str, list[dict[str, Any]]]:
    """Signals recorded after ``since``, by the event they judge: id, type, confidence, text (an
    explicit correction's words)."""
    r = t.records.c
    query = select(r.id, r.content, r.confidence, r.data).where(r.user_id == user_id, r.kind == "signal")
    if since is not None:
        query = query.where(r.created_at > since)
    out: dict[str, list[dict[str, Any]]] = {}
    with map_sql_errors(), store.tx.connect() as conn:
        for x in conn.execute(query.order_by(r.created_at)):
            data = x.data or {}
            text = x.content if data.get("type") == "correction" and x.content != data.get("detail") else None
            out.setdefault(str(data.get("target_event_id")), []).append(
                {"id": x.id, "type": data.get("type"), "confidence": x.confidence, "text": text}
            )
    return out


def window_events(
    store: SqlMemoryStore, user_id: str, since: datetime | None, until: datetime
) -> list[dict[str, Any]]:
    """The user's messages after ``since`` up to ``until``, oldest first, as plain data."""
    r = t.records.c
    query = select(r.id, r.content, r.at, r.dialogue_id, r.reply, r.key, r.data, r.valid_until).where(
        r.user_id == user_id, r.kind == "event", r.role == "user", r.at <= until
    )
    if since is not None:
        query = query.where(r.at > since)
    query = query.order_by(r.at.desc()).limit(WINDOW_LIMIT)
    with map_sql_errors(), store.tx.connect() as conn:
        rows = conn.execute(query).all()
    return [
        {"id": x.id, "text": x.content, "at": x.at, "dialogue_id": x.dialogue_id, "reply": x.reply,
         "statement": (x.data or {}).get("statement"), "valid_until": x.valid_until}
        for x in reversed(rows)
    ]


def publish_plan(
    memory: Memory, state: Mapping[str, Any], rollout: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """Apply a scored plan in one transaction (or only report it for a dry run).

    ``rollout`` (share, until) is attached to strategies this run activates (gray release).
    """
    run_id = str(uuid.uuid4())
    user_id, at = state["user_id"], state["at"]
    plan = [dict(i) for i in state.get("plan", [])]
    dialogues = {e["id"]: e["dialogue_id"] for e in state.get("events", [])}
    counts: dict[str, int] = {}
    items = []

    def tally(item: dict[str, Any], outcome: str) -> None:
        counts[outcome] = counts.get(outcome, 0) + 1
        items.append(_describe(item, outcome))

    def report() -> dict[str, Any]:
        return {"run_id": run_id, "user_id": user_id, "trigger": state["trigger"], "dry_run": state["dry_run"],
                "window_events": len(state.get("events", [])), "counts": counts, "items": items,
                "llm": state.get("llm", {})}  # fmt: skip

    def tally_close(close: Mapping[str, Any], outcome: str) -> None:
        counts[outcome] = counts.get(outcome, 0) + 1
        items.append({"outcome": outcome, "kind": None, "content": close.get("text"), "key": None,
                      "target_id": close["statement_id"], "reason": f"the model: superseded by {close['by_event_id']}",
                      "confidence": None, "source_event_ids": [close["by_event_id"]]})  # fmt: skip

    closes = list(state.get("close_statements", []))
    if state["dry_run"]:  # nothing is written, not even the run
        for item in plan:
            tally(item, f"would_{item['action']}")
        for close in closes:
            tally_close(close, "would_close_statement")
        return run_id, report()
    referenced = sorted({i for item in plan for i in _references(item)})
    present = set(memory.store.get_many(user_id, referenced)) if referenced else set()
    with map_sql_errors(), memory.store.tx.unit() as conn:
        changes = ChangeSet(conn, user_id, run_id, at)
        created: dict[tuple[str, str], str] = {}
        for item in plan:
            if not set(_references(item)) <= present:  # forgotten while the model was thinking
                tally(item, "dropped_forgotten")
                continue
            guard = item.get("guard") or {}
            if guard.get("outcome") == "rejected":  # never written; the reason stays visible
                queue_review(conn, item, guard, user_id, run_id, None, at, status="rejected")
                tally(item, "rejected")
                continue
            outcome = _apply(changes, item, run_id, dialogues, created, rollout)
            if guard.get("outcome") == "queued":
                p = item["proposal"]
                record_id = created.get((p["kind"], p["content"])) or item.get("target_id")
                queue_review(conn, item, guard, user_id, run_id, record_id, at)
                outcome = "queued_for_review"
            elif guard.get("outcome") == "held":
                outcome = f"{outcome}_held"
            tally(item, outcome)
        for close in closes:  # checked against what the model was shown (tianma.memory.model_closes)
            done = close_on_model_word(memory.store, user_id, close, run_id)
            tally_close(close, "statement_closed" if done else "statement_already_closed")
        conn.execute(
            t.reflection_runs.insert().values(
                id=run_id, user_id=user_id, started_at=at, until=state.get("until", at), trigger=state["trigger"],
                status="published", report=t.plain(report()),
            )
        )  # fmt: skip
        memory.reindex(user_id, changes.touched)
    return run_id, report()


def _references(item: Mapping[str, Any]) -> list[str]:
    """Records a plan item stands on: its proposal's events and its target."""
    p = item.get("proposal") or {}
    return [*p.get("source_event_ids", ()), *([item["target_id"]] if item.get("target_id") else [])]


def _apply(
    changes: ChangeSet, item: dict[str, Any], run_id: str, dialogues: Mapping[str, str],
    created: dict[tuple[str, str], str], rollout: dict[str, Any] | None = None,
) -> str:  # fmt: skip
    p = item["proposal"]
    action = item["action"]
    evidence = list(item.get("evidence", ()))
    if action == "create":
        support = {**item["support"], "runs": [run_id]}
        prov = Provenance(event_ids=tuple(p["source_event_ids"]),
                          dialogue_ids=tuple(dict.fromkeys(dialogues[e] for e in p["source_event_ids"] if e in dialogues)),
                          reflection_ids=(run_id,), source=f"reflection:{p['origin']}")  # fmt: skip
        data = {"polarity": p.get("polarity"), "support": support, "origin": p["origin"]}
        if p["kind"] == "strategy":
            data.update(
                trigger=p.get("trigger") or {},
                priority=p.get("priority", 0),
                weight=item["confidence"],
                zone=item.get("zone", STRATEGY_DEFAULT_ZONE),
            )
            if rollout and item["status"] == "active":
                data["rollout"] = rollout
        if (item.get("guard") or {}).get("outcome") in ("queued", "held"):
            data["guard"] = {k: v for k, v in item["guard"].items() if k != "preview"}
        new = changes.create(p["kind"], p["content"], prov, key=p.get("key"), scope=p.get("scope", "global"),
                             confidence=item["confidence"], status=item["status"], data=data,
                             importance=p.get("importance", 0.5))  # fmt: skip
        created[(p["kind"], p["content"])] = new
        return f"created_{item['status']}"
    if action == "support":
        row = changes.record(item["target_id"])
        support = {
            **item["support"],
            "runs": [run_id if r == "<this run>" else r for r in item["support"]["runs"]],
        }
        data = {**row["data"], "support": support}
        if rollout and row["kind"] == "strategy" and item["status"] == "active" and row["status"] != "active":
            data["rollout"] = rollout
        prov = Provenance.from_json(row["provenance"])
        prov = Provenance(tuple(dict.fromkeys(prov.event_ids + tuple(p["source_event_ids"]))), prov.dialogue_ids,
                          tuple(dict.fromkeys((*prov.reflection_ids, run_id))), prov.source)  # fmt: skip
        changes.update(item["target_id"], reason=f"support: {item.get('decision', '')}", evidence=evidence,
                       confidence=item["confidence"], status=item["status"],
                       data=data, provenance=prov.to_json())  # fmt: skip
        return "supported"
    if action == "supersede":  # by a proposal of this run, or by the statement that closed it
        new_id = created.get((p["kind"], p["content"])) if p else next(iter(item.get("extra_targets") or ()), None)
        changes.supersede(item["target_id"], new_id, reason=item["reason"], evidence=evidence)
        return "superseded"
    if action == "promote":
        changes.update(
            item["target_id"], reason=item["reason"], evidence=evidence, kind="fact", key=item["key"]
        )
        return "promoted"
    if action == "disable":
        changes.set_status(item["target_id"], "disabled", reason=item["reason"], evidence=evidence)
        new_id = created.get((p["kind"], p["content"])) if p else None
        if new_id:
            changes.set_status(new_id, "disabled", reason=item["reason"], evidence=evidence)
        return "disabled"
    return "skipped"


def queue_review(
    conn: Connection, item: dict[str, Any], guard: dict[str, Any], user_id: str, run_id: str,
    record_id: str | None, at: datetime, status: str = "pending",
) -> str:  # fmt: skip
    """The review row of a guarded item (pending, or rejected unwritten)."""
    p = item["proposal"]
    return queue(conn, user_id=user_id, record_id=record_id, run_id=run_id, kind=p["kind"], content=p["content"],
                 zone=guard.get("zone", "free"), mode=guard.get("mode", "manual"), reason=guard.get("reason", ""),
                 preview=guard.get("preview") or {}, evidence=p["source_event_ids"], at=at, status=status)  # fmt: skip


def _describe(item: dict[str, Any], outcome: str) -> dict[str, Any]:
    p = item.get("proposal") or {}
    guard = item.get("guard") or {}
    return {"outcome": outcome, "kind": p.get("kind"), "content": p.get("content"), "key": p.get("key"),
            "target_id": item.get("target_id"),
            "reason": guard.get("reason") or item.get("decision") or item.get("reason"),
            "confidence": item.get("confidence"), "source_event_ids": list(p.get("source_event_ids", []))}  # fmt: skip


def undo_reflection(memory: Memory, run_id: str) -> list[str]:
    """Restore what a run changed, in one transaction, then fix the indexes."""
    with map_sql_errors(), memory.store.tx.unit() as conn:
        user_id = conn.execute(
            select(t.reflection_runs.c.user_id).where(t.reflection_runs.c.id == run_id)
        ).scalar()
        ids = undo_run(conn, run_id)
        if user_id is not None:
            memory.reindex(user_id, ids)
            ids += memory.store.reopen_closed_in_run(user_id, run_id)  # closed on the model's word
    return ids


def record_history(store: MemoryStore, record_id: str) -> list[dict[str, Any]]:
    """Prior versions (oldest first) then the current one, each with why it changed."""
    current = store.get(record_id)
    query = (
        select(t.record_versions)
        .where(t.record_versions.c.record_id == record_id)
        .order_by(t.record_versions.c.version)
    )
    with map_sql_errors(), store.tx.connect() as conn:
        rows = [t.row_dict(r) for r in conn.execute(query)]
    history = [
        {"version": r["version"], "content": r["content"], "confidence": r["confidence"], "status": r["status"],
         "replaced_at": r["changed_at"], "change_reason": r["reason"], "change_evidence": r["evidence"],
         "run_id": r["run_id"]}
        for r in rows
    ]  # fmt: skip
    history.append({"version": current.version, "content": current.content, "confidence": current.confidence,
                    "status": current.status, "replaced_at": None, "change_reason": None,
                    "change_evidence": [], "run_id": None, "current": True})  # fmt: skip
    return history


MAINTAINED_KINDS: tuple[Kind, ...] = ("fact", "preference", "experience", "strategy")


def maintain_user(memory: Memory, user_id: str, at: datetime) -> dict[str, Any]:
    """Decay the user's idle learnt records; too weak ones become inactive (restorable); of two
    strategies for the same trigger, the clearly worse one (A/B, enough trials) is disabled.

    Recorded as an undoable run with status ``maintenance``.
    """
    from tianma.policies.decay import decay, rule_for
    from tianma.policies.exploration import ab_pairs, compare

    run_id = str(uuid.uuid4())
    decayed: list[str] = []
    inactive: list[str] = []
    records = [r for r in memory.store.list_records(user_id, MAINTAINED_KINDS) if r.status == "active"]
    with map_sql_errors(), memory.store.tx.unit() as conn:
        changes = ChangeSet(conn, user_id, run_id, at)
        for r in records:
            last_active = r.last_hit_at or r.updated_at
            last_decay = datetime.fromisoformat(r.data["last_decay"]) if r.data.get("last_decay") else None
            rule = rule_for(r.kind, r.key, r.content)
            outcome = decay(r.confidence, last_active, last_decay, at, rule)
            if outcome.periods == 0 or rule.period is None:
                continue
            status = "inactive" if outcome.inactive else r.status
            reason = f"decay: {outcome.periods} x {rule.period.days} days without a hit"
            changes.update(r.id, reason=reason, confidence=outcome.confidence, status=status,
                           data={**r.data, "last_decay": at.isoformat()})  # fmt: skip
            (inactive if outcome.inactive else decayed).append(r.id)
        ab: list[dict[str, Any]] = []
        fresh = memory.store.get_many(user_id, [r.id for r in records if r.kind == "strategy"])
        for a, b in ab_pairs([r for r in fresh.values() if r.status == "active"]):
            result = compare(a, b)
            if result.loser_id is not None and result.loser_id not in {x["disabled"] for x in ab}:
                changes.set_status(result.loser_id, "disabled", reason=f"A/B: {result.reason}")
                ab.append({"kept": result.winner_id, "disabled": result.loser_id, "reason": result.reason})
        report = {"run_id": run_id, "user_id": user_id, "decayed": decayed, "inactive": inactive, "ab": ab}
        if changes.touched:
            conn.execute(
                t.reflection_runs.insert().values(
                    id=run_id, user_id=user_id, started_at=at, until=at, trigger="maintain",
                    status="maintenance", report=t.plain(report),
                )
            )  # fmt: skip
        memory.reindex(user_id, changes.touched)
    return report


def reflection_due(
    store: SqlMemoryStore, user_id: str, dialogue_id: str | None, rules: LearningSettings
) -> str | None:
    """Which reflection trigger has fired for the user, if any.

    Runs in every turn: each count stops at its threshold and reads an index range, so its cost
    does not grow with the user's history."""
    since = last_reflected_until(store, user_id)
    r = t.records.c
    after = [r.at > since] if since is not None else []
    with map_sql_errors(), store.tx.connect() as conn:
        if dialogue_id is not None:
            # kind and role as expressions, so that no index on them is used: SQLite (without
            # statistics) would read all of the user's events or signals by ix_records_user_time
            # to find one dialogue's, which ix_records_dialogue finds directly
            turns = conn.execute(
                select(func.count()).where(r.user_id == user_id, r.dialogue_id == dialogue_id, *after,
                                           func.coalesce(r.kind, "") == "event", func.coalesce(r.role, "") == "user")
            ).scalar_one()  # fmt: skip
            signals = conn.execute(
                select(r.data).where(r.user_id == user_id, r.dialogue_id == dialogue_id,
                                     func.coalesce(r.kind, "") == "signal",
                                     *[r.created_at > since] if since is not None else [])
            ).scalars()  # fmt: skip
            negative = sum(1 for data in signals if (data or {}).get("type") in NEGATIVE)
            if turns >= rules.negative_min_turns and negative / turns > rules.negative_share:
                return "negative"
        messages = select(r.id).where(r.user_id == user_id, r.kind == "event", r.role == "user", *after)
        if _at_least(conn, messages, rules.every_messages):
            return "messages"
        d = t.dialogues.c
        ended = [d.ended_at > since] if since is not None else []
        finished = select(d.id).where(d.user_id == user_id, d.ended_at.is_not(None), *ended)
        return "dialogues" if _at_least(conn, finished, rules.every_dialogues) else None


def _at_least(conn: Connection, rows: Select[Any], n: int) -> bool:
    """Whether the query has ``n`` rows or more, reading no more than ``n``."""
    limited = rows.limit(max(n, 1)).subquery()
    return int(conn.execute(select(func.count()).select_from(limited)).scalar_one()) >= n


def validated_streaks(store: SqlMemoryStore, user_id: str) -> dict[str, int]:
    """For each record injected into the user's turns: its longest run of consecutive dialogues
    in which it was injected and no negative signal was credited to it."""
    r, i, d = t.records.c, t.injections.c, t.dialogues.c
    with map_sql_errors(), store.tx.connect() as conn:
        order = [
            row[0] for row in conn.execute(select(d.id).where(d.user_id == user_id).order_by(d.started_at))
        ]
        used = conn.execute(
            select(i.record_id, r.dialogue_id).join(t.records, r.id == i.event_id).where(i.user_id == user_id)
        ).all()
        signals = conn.execute(select(r.data).where(r.user_id == user_id, r.kind == "signal")).scalars().all()
    position = {dialogue: n for n, dialogue in enumerate(order)}
    blamed = {
        rid for data in signals if (data or {}).get("type") in NEGATIVE or (data or {}).get("polarity", 0) < 0
        for rid in (data or {}).get("credited", [])
    }  # fmt: skip
    seen: dict[str, set[int]] = {}
    for record_id, dialogue in used:
        if record_id not in blamed and dialogue in position:
            seen.setdefault(record_id, set()).add(position[dialogue])
    return {rid: _longest_run(sorted(spots)) for rid, spots in seen.items()}


def _longest_run(spots: list[int]) -> int:
    best = run = 0
    previous = None
    for spot in spots:
        run = run + 1 if previous is not None and spot == previous + 1 else 1
        best, previous = max(best, run), spot
    return best
