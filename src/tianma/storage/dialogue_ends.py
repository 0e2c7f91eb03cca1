"""Dialogues that ended by going idle: which are idle, and ending one exactly once.

A chat client never says that a conversation is over, so under ``tianma serve`` a dialogue ends
when it has had no turn for ``serve.dialogue_idle_minutes``. *Open* means
``ended_at`` is NULL: never ended, or reopened by a later turn (``SqlMemoryStore`` clears
``ended_at`` when an event newer than it arrives). The last turn is the newest event of the
dialogue (index ``ix_records_dialogue``), so no column had to be added.

Ending is a compare-and-set: one UPDATE that succeeds only while the dialogue is still open and
has no event newer than the last turn the caller saw. Two processes (``serve`` and cron's
``tianma jobs due``) or two threads racing on one dialogue end it once; a turn that lands in
between keeps it open.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, exists, func, select, update

from tianma.storage import schema as t
from tianma.storage.sql_store import map_sql_errors


@dataclass(frozen=True, slots=True)
class IdleDialogue:
    """An open dialogue whose last turn is older than the idle limit."""

    dialogue_id: str
    user_id: str
    last_turn_at: datetime
    """When its newest event (turn) happened, aware UTC."""


@dataclass(frozen=True, slots=True)
class EndedDialogue:
    """A dialogue ended for being idle."""

    dialogue_id: str
    user_id: str
    last_turn_at: datetime
    ended_at: datetime
    """Its last turn plus the idle limit (not when the job noticed)."""


@dataclass(frozen=True, slots=True)
class IdleSweep:
    """What one pass over the idle dialogues did."""

    ended: tuple[EndedDialogue, ...]
    """The dialogues this pass ended (none that another process or an earlier pass ended)."""
    triggered: tuple[tuple[str, str], ...]
    """``(user_id, trigger)`` of each reflection the ends made due (run, or handed to the
    background worker under ``serve``)."""


def idle_dialogues(engine: Engine, cutoff: datetime, limit: int | None = None) -> list[IdleDialogue]:
    """Open dialogues whose last turn was at or before ``cutoff``, the longest idle first."""
    d, r = t.dialogues.c, t.records.c
    last = (
        select(func.max(r.at))
        .where(r.user_id == d.user_id, r.dialogue_id == d.id, r.kind == "event")
        .correlate(t.dialogues)
        .scalar_subquery()
    )
    open_ = select(d.id, d.user_id, last.label("last_turn_at")).where(d.ended_at.is_(None)).subquery()
    query = (
        select(open_.c.id, open_.c.user_id, open_.c.last_turn_at)
        .where(open_.c.last_turn_at <= cutoff)
        .order_by(open_.c.last_turn_at, open_.c.id)
    )
    if limit is not None:
        query = query.limit(limit)
    with map_sql_errors(), engine.connect() as conn:
        rows = conn.execute(query).all()
    return [IdleDialogue(row.id, row.user_id, t.as_aware(row.last_turn_at)) for row in rows]


def end_idle(engine: Engine, dialogue: IdleDialogue, at: datetime) -> bool:
    """End ``dialogue`` as of ``at`` if it is still open and had no turn after
    ``dialogue.last_turn_at``; ``False`` when it was ended meanwhile or a turn came."""
    d, r = t.dialogues.c, t.records.c
    newer = exists().where(
        r.user_id == dialogue.user_id, r.dialogue_id == dialogue.dialogue_id, r.kind == "event",
        r.at > dialogue.last_turn_at,
    )  # fmt: skip
    with map_sql_errors(), engine.begin() as conn:
        done = conn.execute(
            update(t.dialogues)
            .where(d.id == dialogue.dialogue_id, d.ended_at.is_(None), ~newer)
            .values(ended_at=at)
        )
    return done.rowcount == 1


def ended_before(engine: Engine, cutoff: datetime) -> list[tuple[str, str]]:
    """``(user_id, dialogue_id)`` of the dialogues that ended before ``cutoff`` and stayed ended."""
    d = t.dialogues
    query = select(d.c.user_id, d.c.id).where(d.c.ended_at.is_not(None), d.c.ended_at < cutoff).order_by(d.c.ended_at)
    with map_sql_errors(), engine.connect() as conn:
        return [(str(user), str(dialogue)) for user, dialogue in conn.execute(query)]
