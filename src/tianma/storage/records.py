"""Value objects of the memory model."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Kind = Literal["event", "fact", "preference", "experience", "strategy", "signal"]
KINDS: tuple[Kind, ...] = ("event", "fact", "preference", "experience", "strategy", "signal")
Status = Literal["active", "pending", "inactive", "deprecated", "disabled"]
STATUSES: tuple[Status, ...] = ("active", "pending", "inactive", "deprecated", "disabled")
"""``pending``: a candidate waiting for more evidence; ``inactive``: decayed, restorable;
``deprecated``: superseded (replace log says by what); ``disabled``: switched off for review
(e.g. two contradictory strategies of equal priority). Only ``active`` records are indexed."""
Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a record came from; a record without provenance is a bug."""

    event_ids: tuple[str, ...] = ()
    """Events that stated or support the record."""
    dialogue_ids: tuple[str, ...] = ()
    """Dialogues those events belong to."""
    reflection_ids: tuple[str, ...] = ()
    """Reflection runs that wrote or changed it."""
    source: str = ""
    """What wrote it: ``chat``, ``ingest``, ``reflection``, ``user``."""

    def to_json(self) -> dict[str, Any]:
        return {
            "event_ids": list(self.event_ids),
            "dialogue_ids": list(self.dialogue_ids),
            "reflection_ids": list(self.reflection_ids),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Provenance:
        data = data or {}
        return cls(
            event_ids=tuple(data.get("event_ids", ())),
            dialogue_ids=tuple(data.get("dialogue_ids", ())),
            reflection_ids=tuple(data.get("reflection_ids", ())),
            source=str(data.get("source", "")),
        )


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One row of the memory: an event, fact, preference, experience, strategy or signal."""

    id: str
    user_id: str
    kind: Kind
    content: str
    created_at: datetime
    updated_at: datetime
    provenance: Provenance
    scope: str = "global"
    """``global`` | ``domain:<name>`` | ``dialogue:<id>``."""
    key: str | None = None
    """Structured key of a fact (``profile.name``, ``preference.diet.sugar.general``)."""
    tags: tuple[str, ...] = ()
    confidence: float = 0.5
    importance: float = 0.5
    hit_count: int = 0
    last_hit_at: datetime | None = None
    status: Status = "active"
    version: int = 1
    data: dict[str, Any] = field(default_factory=dict)
    """Kind-specific fields (a strategy's trigger, action, weight, priority, zone)."""
    dialogue_id: str | None = None
    """Events only: the dialogue the event belongs to."""
    role: Role | None = None
    """Events only: who spoke."""
    speaker: str | None = None
    """Events only: the speaker's name, when known (imported conversations)."""
    reply: str | None = None
    """Events only: the assistant's reply to this user message, when there was one."""
    at: datetime | None = None
    """Events only: when it was said."""
    valid_from: datetime | None = None
    """Since when it holds (an event: when it was said)."""
    valid_until: datetime | None = None
    """When it stopped holding: a newer statement about the same subject, or the end of the
    period a time-scoped statement ("今天…", "this week…") was about. None = still holds."""

    def is_valid_at(self, when: datetime) -> bool:
        """Whether it still holds at ``when`` (what was closed is never injected as current)."""
        return self.valid_until is None or when < self.valid_until

    @property
    def source_event_ids(self) -> tuple[str, ...]:
        """Events behind the record; an event is its own source."""
        return (self.id,) if self.kind == "event" else self.provenance.event_ids


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to record (a chat turn's user message, or an imported message)."""

    user_id: str
    role: Role
    text: str
    at: datetime
    dialogue_id: str
    speaker: str | None = None
    external_id: str | None = None
    reply: str | None = None
    error: str | None = None
    source: str = "chat"
    id: str | None = None
    """A chosen id (a proxy announces it before the turn is recorded); None = a new one."""
    key: str | None = None
    """``statement.<kind>`` when the message states something about the user."""
    valid_until: datetime | None = None
    """When a time-scoped statement stops holding."""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record found by retrieval, with the evidence of each channel."""

    record: MemoryRecord
    relevance: float
    """Fused relevance in [0, 1]."""
    channels: tuple[str, ...]
    """Which channels found it: ``dense``, ``keyword``, ``fact``, ``reply`` (follows a found message),
    ``graph`` (the association walk reached it)."""


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    """A candidate after reranking: what a turn injects or a search returns."""

    id: str
    kind: Kind
    content: str
    score: float
    source_event_ids: tuple[str, ...]
    relevance: float = 0.0
    at: datetime | None = None


_RECORD_FIELDS = (
    "id",
    "user_id",
    "kind",
    "content",
    "created_at",
    "updated_at",
    "scope",
    "key",
    "confidence",
    "importance",
    "hit_count",
    "last_hit_at",
    "status",
    "version",
    "dialogue_id",
    "role",
    "speaker",
    "reply",
    "at",
    "valid_from",
    "valid_until",
)


def record_to_dict(record: MemoryRecord) -> dict[str, Any]:
    """A record as plain data (for checkpointed graph state)."""
    out = {name: getattr(record, name) for name in _RECORD_FIELDS}
    out["tags"] = list(record.tags)
    out["data"] = dict(record.data)
    out["provenance"] = record.provenance.to_json()
    return out


def record_from_dict(data: dict[str, Any]) -> MemoryRecord:
    """The inverse of :func:`record_to_dict`."""
    fields: dict[str, Any] = {name: data.get(name) for name in _RECORD_FIELDS}
    return MemoryRecord(
        **fields,
        tags=tuple(data.get("tags", ())),
        data=dict(data.get("data", {})),
        provenance=Provenance.from_json(data.get("provenance")),
    )


def candidate_to_dict(candidate: Candidate) -> dict[str, Any]:
    """A candidate as plain data."""
    return {
        "record": record_to_dict(candidate.record),
        "relevance": candidate.relevance,
        "channels": list(candidate.channels),
    }


def candidate_from_dict(data: dict[str, Any]) -> Candidate:
    """The inverse of :func:`candidate_to_dict`."""
    return Candidate(
        record=record_from_dict(data["record"]),
        relevance=float(data["relevance"]),
        channels=tuple(data["channels"]),
    )


def scored_to_dict(memory: ScoredMemory) -> dict[str, Any]:
    """An injected memory as plain data."""
    return {
        "id": memory.id,
        "kind": memory.kind,
        "content": memory.content,
        "score": memory.score,
        "source_event_ids": list(memory.source_event_ids),
        "relevance": memory.relevance,
        "at": memory.at,
    }
