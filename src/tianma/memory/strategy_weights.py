"""Strategy weights learn from what followed a reply: ``w ← w + lr · (reward − expected)``.

The reward combines explicit feedback and the next user move (follow-up, rephrase, repeated
question, correction, impatience — see ``tianma.policies.exploration``); ``expected`` is the
strategy's running mean reward. Each judgement of a turn is one trial of every strategy that
turn applied; explored trials are counted apart, so exploration statistics can be shown.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import update

from tianma.memory.service import Memory
from tianma.policies.credit import NEGATIVE
from tianma.policies.exploration import Outcome, expected_reward, record_trial, reward, update_weight
from tianma.storage import schema as t
from tianma.storage.sql_store import map_sql_errors


def outcome_of(signal_types: Iterable[str], explicit: float | None = None) -> Outcome:
    """The outcome of a turn from the types of the signals that judged it."""
    types = set(signal_types)
    if explicit is None and types & {"like", "praise"}:
        explicit = 1.0
    if explicit is None and "dislike" in types:
        explicit = -1.0
    return Outcome(
        explicit=explicit,
        correction="correction" in types,
        rephrase=bool(types & {"resubmit", "regenerate"}),
        repeat="repeat" in types,
        follow_up=not (types & NEGATIVE),
        impatience="impatience" in types,
        omission="omission" in types,
    )


def learn_weights(memory: Memory, event_id: str, outcome: Outcome, lr: float) -> dict[str, float]:
    """Update the weight and trial statistics of the strategies the turn ``event_id`` applied.

    Returns strategy id → new weight.
    """
    applied = {row["record_id"]: bool(row["explored"]) for row in memory.store.injections_of(event_id)
               if row["role"] == "strategy"}  # fmt: skip
    if not applied:
        return {}
    value = reward(outcome)
    event = memory.store.get(event_id)
    strategies = memory.store.get_many(event.user_id, list(applied))
    moved: dict[str, float] = {}
    with map_sql_errors(), memory.store.tx.begin() as conn:
        for sid, record in strategies.items():
            stats = dict(record.data.get("stats") or {})
            weight = update_weight(
                float(record.data.get("weight", record.confidence)), value, expected_reward(stats), lr
            )
            data = {**record.data, "weight": weight, "stats": record_trial(stats, value, applied[sid])}
            conn.execute(update(t.records).where(t.records.c.id == sid).values(data=data))
            moved[sid] = weight
    return moved
