"""What every prompt carries: the learnt preferences that still hold and the user's current
statements that none of them stands for, at most :data:`MAX_RESIDENT`, an older statement a newer
one probably replaces shown marked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from tianma.memory.service import Memory
from tianma.memory.statements import cue_of, is_lasting, still_stated, subject_scores
from tianma.storage.records import MemoryRecord

MAX_RESIDENT = 8
"""Resident items in a prompt (learnt preferences and current statements together)."""


MARK_SUBJECT = 0.35
"""Below the subject threshold a newer statement does not close an older one, but from this score
(on passage vectors, as :data:`~tianma.memory.statements.ON_PASSAGES`) on the older one is shown *marked* as replaced by it (“已于 11月20日 改为：…”), so the model
reads which holds; a wrong mark costs less than a wrong close (both stay visible)."""


def resident_profile(
    memory: Memory,
    user_id: str,
    at: datetime,
    learnt: Sequence[dict[str, Any]],
    relevance: dict[str, float],
    background: np.ndarray,
    limit: int = MAX_RESIDENT,
    mark: bool = False,
    closeness: Callable[[np.ndarray], float] | None = None,
) -> list[dict[str, Any]]:
    """What the prompt carries on every turn: the learnt preferences that still hold, then the
    user's current statements that no learnt record already stands for.

    With ``mark``, an older lasting statement that a newer one is probably about
    (:data:`MARK_SUBJECT`) carries ``superseded_by`` and is shown marked. Beyond ``limit``, marked statements go first, then
    come statements about how to answer, those most relevant to this message and the newest.
    Relevance is the turn search's (``relevance``), then ``closeness`` of the statement's vector
    to this message (e5's similarity, before the search's noise floor, which leaves a related
    statement that shares no word with the message at 0): a user whose chats left many
    statements keeps the one this message is about, not the newest.
    """
    store = memory.store
    ids = {e for p in learnt for e in p.get("source_event_ids", ())}
    statements = store.current_statements(user_id, at)
    sources = {s.id: s for s in statements} | store.get_many(user_id, sorted(ids - {s.id for s in statements}))
    kept = [p for p in learnt if still_stated(p.get("source_event_ids", ()), sources, at)]
    covered = {e for p in kept for e in p.get("source_event_ids", ())}
    fresh = [s for s in statements if s.id not in covered]
    marks = _marks(memory, user_id, fresh, background) if mark else {}
    near: dict[str, float] = {}
    if closeness is not None and len(kept) + len(fresh) > limit:
        near = {i: closeness(v) for i, v in memory.vectors.get_vectors(user_id, [st.id for st in fresh]).items()}
    fresh.sort(key=lambda s: (s.id in marks, not _style(s), -relevance.get(s.id, 0.0), -near.get(s.id, 0.0),
                              -(s.at or at).timestamp()))  # fmt: skip
    rows = []
    for s in fresh:
        row = {"id": s.id, "kind": "event", "content": s.content, "confidence": 1.0, "at": s.at,
               "until": s.valid_until, "source_event_ids": [s.id]}  # fmt: skip
        if s.id in marks:
            newer = marks[s.id]
            row.update(superseded_by=newer.id, superseded_at=newer.at, superseded_text=newer.content)
        rows.append(row)
    return [*kept, *rows][:limit]


def _marks(
    memory: Memory, user_id: str, statements: Sequence[MemoryRecord], background: np.ndarray
) -> dict[str, MemoryRecord]:
    """Older lasting statement id → the newer one it is probably replaced by."""
    lasting = [s for s in statements if is_lasting(s) and s.at is not None]
    if len(lasting) < 2:
        return {}
    vectors = memory.vectors.get_vectors(user_id, [s.id for s in lasting])
    lasting = sorted((s for s in lasting if s.id in vectors), key=lambda s: s.at or datetime.min)
    best: dict[str, tuple[float, MemoryRecord]] = {}
    for i, newer in enumerate(lasting[1:], 1):
        older = lasting[:i]
        scores = subject_scores(newer, vectors[newer.id], older, [vectors[o.id] for o in older], background)
        for old, score in zip(older, scores, strict=True):
            if score >= MARK_SUBJECT and score > best.get(old.id, (0.0, old))[0]:
                best[old.id] = (score, newer)
    return {old_id: newer for old_id, (_, newer) in best.items()}


def _style(record: MemoryRecord) -> bool:
    cue = cue_of(record)
    return cue is not None and cue.style
