"""Store a batch of imported turns the way a live turn is stored, without calling the model.

Each message is screened first: a planted instruction is rejected (reported, never stored),
secrets are replaced and PII handled as for a live message, a message longer than a live one may
be (``serve.max_message_chars``) is cut. A message already stored — under its source's id (an
earlier import of the same history) or as tianma recorded it live (the same words the same day)
— is not added again. The rest become events with their original times and, for the user's own
statements, the same statement fields, statement model reading and closing of what they
supersede as a live message (:mod:`tianma.memory.statements`).

Only what passes the write filter is searchable (seed 000 §4.4: the whole history in the vector
index drowned retrieval in noise): the user's statements and the messages the rule extractor
finds worth remembering. Every other message stays in the log (history, export, reflection,
the day summaries of :mod:`tianma.importing.days`) marked ``archived``, never in an index.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import numpy as np

from tianma.guardrails.constitution import Constitution
from tianma.guardrails.injection import detect_injection
from tianma.guardrails.pii import scrub
from tianma.guardrails.secrets import redact_secrets
from tianma.guardrails.zones import may_stand_as_stated
from tianma.importing.messages import Problem
from tianma.importing.turns import ImportTurn
from tianma.memory import subject_vectors
from tianma.memory.embedders import EMBED_CHARS
from tianma.memory.search import AnchorCache
from tianma.memory.service import Memory
from tianma.memory.statement_model import Reading, statement_model
from tianma.memory.statements import close_by_newer, close_superseded, statement_fields
from tianma.policies.importance import IMPORTANCE_THRESHOLD, importance
from tianma.settings import Settings
from tianma.storage.imported import IMPORT_SOURCE, stored_external_ids, user_messages_between
from tianma.storage.records import MemoryRecord, NewEvent
from tianma.storage.schema import utcnow
from tianma.text.action_facts import action_facts
from tianma.text.extract import extract_statements

LIVE_WINDOW = timedelta(hours=12)
"""A user message with the same words this near in time is the one tianma recorded live."""
CUT_MARK = " …[cut / 已截断]"


@dataclass(slots=True)
class Stored:
    """What one batch did."""

    turns: int = 0
    added: int = 0
    """Events written now."""
    already: int = 0
    """Turns stored by an earlier import (the same source ids): nothing changed."""
    mine: int = 0
    """Of those, how many this very import stored (an earlier, interrupted run of it)."""
    live: int = 0
    """User messages tianma had already recorded live (same words, same day)."""
    searchable: int = 0
    """Added events that passed the write filter (indexed); the others are archived."""
    statements: int = 0
    closed: int = 0
    """Earlier statements closed by newer ones of this batch."""
    outdated: int = 0
    """Statements of this batch closed by newer ones already stored (said live since, say)."""
    secrets: int = 0
    """Secret values replaced."""
    pii: int = 0
    cut: int = 0
    replies_dropped: int = 0
    """Assistant answers not kept because they carried a planted instruction."""
    chars: int = 0
    """Characters of the messages read (user messages and answers)."""
    searchable_chars: int = 0
    rejected: list[Problem] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Clean:
    turn: ImportTurn
    text: str
    reply: str | None


def store_turns(
    memory: Memory, anchors: AnchorCache, settings: Settings, constitution: Constitution,
    lock: threading.RLock, user_id: str, turns: Sequence[ImportTurn], tag: str,
) -> Stored:  # fmt: skip
    """Screen, deduplicate and record ``turns`` (oldest first) for the import ``tag``; the model
    is never called and the memory lock is held only for the writes (embedding happens before)."""
    out = Stored(turns=len(turns))
    known = stored_external_ids(memory.store, user_id, [t.message.external_id for t in turns])
    fresh = [t for t in turns if t.message.external_id not in known]
    out.already = len(turns) - len(fresh)
    mine = [record_id for record_id, by in known.values() if by == tag]
    out.mine = len(mine)
    clean = [c for t in fresh if (c := _screen(t, settings, out)) is not None]
    clean = _not_live(memory, user_id, clean, out)
    if not clean:
        if mine:  # a run killed between this batch's two transactions: its statements close now
            with lock:
                _close(memory, anchors, settings, user_id, _stored_statements(memory, user_id, mine), out)
        return out
    vectors = memory.embedder.embed_passages([c.text[:EMBED_CHARS] for c in clean])
    model = statement_model(memory.embedder)
    events: list[NewEvent] = []
    for c, vector in zip(clean, vectors, strict=True):
        reading = model.read(np.asarray(vector, dtype=np.float32))
        events.append(_event(c, user_id, tag, reading, settings, constitution))
    events = [_with_subject(memory, e) for e in events]  # embedded here, not under the lock
    with lock:
        with memory.store.tx.unit():
            stored, added = memory.store.add_events(events)
            new = [i for i, r in enumerate(stored) if r.id in added]
            memory.index([stored[i] for i in new], vectors[new])
        # after the commit, when the batch's vectors are in the index (with those of this import's
        # statements stored before a kill between the two transactions)
        statements = [(stored[i], vectors[i]) for i in new if stored[i].key is not None]
        _close(memory, anchors, settings, user_id, [*_stored_statements(memory, user_id, mine), *statements], out)
    for i in new:
        record = stored[i]
        out.added += 1
        out.statements += record.key is not None
        if not record.data["import"]["archived"]:
            out.searchable += 1
            out.searchable_chars += len(record.content)
    return out


def _stored_statements(memory: Memory, user_id: str, ids: Sequence[str]) -> list[tuple[MemoryRecord, np.ndarray]]:
    """This import's statement events stored by an earlier run, with their vectors."""
    records = [r for r in memory.store.get_many(user_id, list(ids)).values() if r.key is not None]
    vectors = memory.vectors.get_vectors(user_id, [r.id for r in records]) if records else {}
    return [(r, vectors[r.id]) for r in records if r.id in vectors]


def _close(
    memory: Memory, anchors: AnchorCache, settings: Settings, user_id: str,
    statements: Sequence[tuple[MemoryRecord, np.ndarray]], out: Stored,
) -> None:  # fmt: skip
    """Each statement, oldest first, closes the earlier ones of its subject, as it would have when
    it was said; and what the user said later (live, or in another import) closes it. Again for
    a statement already handled changes nothing (what is closed is not current any more)."""
    if not settings.learning.close_superseded or not statements:
        return
    batch = {r.id for r, _ in statements}
    with memory.store.tx.unit():
        for record, vector in sorted(statements, key=lambda s: (s[0].at or utcnow(), s[0].id)):
            out.closed += len(close_superseded(memory, record, vector, anchors))
            out.outdated += close_by_newer(memory, record, vector, anchors, utcnow(), batch) is not None


def _cut(text: str, limit: int, out: Stored) -> str:
    if len(text) <= limit:
        return text
    out.cut += 1
    return text[:limit] + CUT_MARK


def _clean(text: str, settings: Settings, out: Stored) -> str:
    redacted, secrets = redact_secrets(_cut(text, settings.serve.max_message_chars, out))
    cleaned, pii = scrub(redacted, settings.guardrails.pii_redaction)
    out.secrets += len(secrets)
    out.pii += len(pii)
    return cleaned


def _screen(turn: ImportTurn, settings: Settings, out: Stored) -> _Clean | None:
    """The turn as it may be stored, or None when its message plants instructions."""
    message = turn.message
    out.chars += len(message.text) + len(turn.reply or "")
    verdict = detect_injection(message.text)
    if verdict.is_attack:
        out.rejected.append(Problem(message.position, f"planted instruction ({', '.join(verdict.reasons)})"))
        return None
    reply = turn.reply
    if reply is not None and detect_injection(reply).is_attack:
        out.replies_dropped += 1
        reply = None
    return _Clean(turn, _clean(message.text, settings, out), None if reply is None else _clean(reply, settings, out))


def _not_live(memory: Memory, user_id: str, clean: list[_Clean], out: Stored) -> list[_Clean]:
    """Without the user messages tianma recorded live: same words within :data:`LIVE_WINDOW`."""
    users = [c for c in clean if c.turn.message.role == "user"]
    if not users:
        return clean
    start = min(c.turn.message.at for c in users) - LIVE_WINDOW
    end = max(c.turn.message.at for c in users) + LIVE_WINDOW
    live: dict[str, list[Any]] = {}
    for record in user_messages_between(memory.store, user_id, start, end):
        if record.provenance.source != IMPORT_SOURCE and record.at is not None:
            live.setdefault(" ".join(record.content.split()), []).append(record.at)
    kept = []
    for c in clean:
        times = live.get(" ".join(c.text.split()), []) if c.turn.message.role == "user" else []
        if any(abs(at - c.turn.message.at) <= LIVE_WINDOW for at in times):
            out.live += 1
            continue
        kept.append(c)
    return kept


def _worth_keeping(text: str) -> bool:
    """The write filter of seed 000 §2.3 for an old message: a statement worth remembering or an
    action that turned on a date, place, amount or relationship."""
    if action_facts(text):
        return True
    return any(not item.time_bound and importance(item) >= IMPORTANCE_THRESHOLD for item in extract_statements(text))


def _with_subject(memory: Memory, event: NewEvent) -> NewEvent:
    """A lasting statement with its subject vectors (:mod:`tianma.memory.subject_vectors`), which
    closing compares."""
    if event.key is None or event.valid_until is not None:
        return event
    return replace(event, data={**(event.data or {}), **subject_vectors.entry(memory.embedder, event.text)})


def _event(
    c: _Clean, user_id: str, tag: str, reading: Reading, settings: Settings, constitution: Constitution
) -> NewEvent:
    message = c.turn.message
    stated: dict[str, Any] = {}
    if message.role == "user":
        stated = statement_fields(c.text, message.at, settings.zone, reading.label == "mood", reading.sure_other,
                                  reading.sure_statement, reading.label == "statement")
        if stated and may_stand_as_stated(c.text, constitution):
            stated = {}  # kept in the log as a plain message, never resident as the user's wish
    searchable = bool(stated) or (message.role == "user" and _worth_keeping(c.text))
    origin = {"tag": tag, "position": message.position, "title": message.title, "archived": not searchable,
              "reply_ids": list(c.turn.reply_ids)}  # fmt: skip
    data = {**stated.get("data", {}), "import": origin}
    return NewEvent(
        user_id=user_id, role=message.role, text=c.text, at=message.at, dialogue_id=message.dialogue_id,
        speaker=message.speaker, external_id=message.external_id, reply=c.reply, source=IMPORT_SOURCE,
        key=stated.get("key"), valid_until=stated.get("valid_until"), data=data,
    )  # fmt: skip
