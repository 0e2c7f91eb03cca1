"""What the user said later on the subject of a statement the prompt carries.

A change of mind the rules did not read as a statement (“恐怖片看多了晚上老睡不着，最近就想看点轻松的”
has no wish word they know) closes nothing: the old statement stays resident in every prompt and
the new message is only an event in the log, which the turn's search may not bring for a question
that shares few words with it. So beside each of the resident statements this turn's search also
found (the ones the message is about, at most :data:`LATER_FOR`), the prompt shows the user's
nearest later message to it that states something and was not read as a statement — the model
reads both with their dates and which came last.

“States something”: it asks nothing (:func:`~tianma.policies.statements.asks_now`), the statement
model (:mod:`tianma.memory.statement_model`) does not take it for a message about nothing
(:data:`OTHER_AT`), no secret was removed from it, and it is no paste
(:func:`~tianma.memory.statements.is_paste`). A message the rules read as a statement is
left out: it closed what it was about when it was said, or holds beside it on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tianma.memory.service import Memory
from tianma.memory.statement_model import statement_model
from tianma.memory.statements import is_paste
from tianma.policies.statements import asks_now
from tianma.storage.records import MemoryRecord
from tianma.text.placeholders import SECRET_PLACEHOLDERS

LATER_FOR = 2
"""Resident statements, those most relevant to this message first, that get their later words."""
NEIGHBOURS = 20
"""Nearest messages of the user looked through for each statement."""
OTHER_AT = 0.5
"""Probability of ``other`` from which a message is taken to state nothing about the user."""


def with_later_words(
    memory: Memory, user_id: str, at: datetime, rows: Sequence[dict[str, Any]], relevance: dict[str, float],
) -> list[dict[str, Any]]:  # fmt: skip
    """``rows`` (the resident profile) with each found statement's later words right after it: a
    row of the same shape with ``later_on`` naming the statement. ``relevance``: the turn search's
    score of each record (a statement it did not find gets none)."""
    found = sorted((r for r in rows if r.get("kind") == "event" and relevance.get(r["id"], 0.0) > 0
                    and r.get("at") is not None), key=lambda r: -relevance[r["id"]])[:LATER_FOR]  # fmt: skip
    if not found:
        return list(rows)
    taken = {r["id"] for r in rows}
    later: dict[str, dict[str, Any]] = {}
    for row in found:
        words = _nearest_later(memory, user_id, row, at, taken)
        if words is not None:
            taken.add(words.id)
            later[row["id"]] = {"id": words.id, "kind": "event", "content": words.content, "confidence": 1.0,
                                "at": words.at, "until": None, "source_event_ids": [words.id],
                                "later_on": row["id"]}  # fmt: skip
    out: list[dict[str, Any]] = []
    for r in rows:
        out.append(r)
        if r["id"] in later:
            out.append(later[r["id"]])
    return out


def _nearest_later(
    memory: Memory, user_id: str, row: dict[str, Any], at: datetime, taken: set[str]
) -> MemoryRecord | None:
    """The user's nearest message to the statement of ``row``, said after it and before ``at``,
    that states something and was not read as a statement; None when there is none."""
    vector = memory.vectors.get_vectors(user_id, [row["id"]]).get(row["id"])
    if vector is None:
        return None
    hits = [i for i, _ in memory.vectors.search(user_id, vector, NEIGHBOURS) if i not in taken]
    records = memory.store.get_many(user_id, hits)
    after = [records[i] for i in hits if i in records and _unread_words(records[i], row["at"], at)]
    if not after:
        return None
    vectors = memory.vectors.get_vectors(user_id, [r.id for r in after])
    model = statement_model(memory.embedder)
    return next((r for r in after if r.id in vectors and model.probabilities(vectors[r.id])["other"] < OTHER_AT), None)


def _unread_words(record: MemoryRecord, since: datetime, at: datetime) -> bool:
    """A user's message between ``since`` and ``at``, still holding, that no rule read as a
    statement, no paste (no change of mind, and it would sit in every prompt about its subject),
    that asks nothing and held no secret."""
    return (record.kind == "event" and record.role == "user" and record.at is not None and since < record.at < at
            and record.is_valid_at(at) and "statement" not in record.data and not is_paste(record.content)
            and not asks_now(record.content)
            and not any(mark in record.content for mark in SECRET_PLACEHOLDERS.values()))  # fmt: skip
