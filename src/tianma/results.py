"""The result types of the public API's learning and review methods (:class:`tianma.Runtime`).

The services under :mod:`tianma.memory` build plain dicts (what reflection runs store as JSON);
``Runtime`` turns each into one of these frozen values with ``from_dict``, and ``as_dict`` gives
back exactly that dict (the JSON a report has always had). Through the admin API
(:mod:`tianma.operations`) they travel as their fields, so a command gets the same type whether
it ran here or inside ``tianma serve``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ClassVar, Self

from tianma.storage.records import Kind, Status


class _Result:
    """``from_dict``/``as_dict`` for the dataclasses below, driven by their field types."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        """Build from the dict the producing service returns; keys it does not know are ignored.

        Lists become tuples, nested reports their types, ISO strings of datetime fields datetimes.

        Raises:
            TypeError: a field without a default is missing from ``d``.
        """
        hints = _hints(cls)
        build: Callable[..., Self] = cls
        return build(
            **{name: _field_value(hints[name], d[name]) for name in cls.__dataclass_fields__ if name in d}
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready dict the service returned (tuples as lists, nested reports as dicts)."""
        return {name: _plain(getattr(self, name)) for name in self.__dataclass_fields__}


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of ``cls``, worked out once per type."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _field_value(hint: Any, value: Any) -> Any:
    """``value`` from a service's dict as a field annotated ``hint`` holds it."""
    if value is None:
        return None
    if typing.get_origin(hint) in (types.UnionType, typing.Union):  # X | None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_field_value(item, v) for v in value)
    if origin is Mapping:
        return dict(value)  # a copy: the value does not share the service's dict
    if isinstance(hint, type) and issubclass(hint, _Result):
        return hint.from_dict(value)
    if hint is datetime and isinstance(value, str):
        return datetime.fromisoformat(value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, _Result):
        return value.as_dict()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


# -- reflection and maintenance --------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ReflectionItem(_Result):
    """One item of a reflection's plan and what became of it."""

    outcome: str
    """``created_active``, ``created_pending``, ``supported``, ``superseded``, ``promoted``,
    ``disabled``, ``queued_for_review``, ``rejected``, ``dropped_forgotten``, ``skipped``, a
    ``…_held`` outcome (gray release), ``statement_closed`` (a statement of the user closed on the
    reflection model's word: ``target_id``, closed by ``source_event_ids``; its undo reopens it) or
    ``statement_already_closed``, or, in a dry run, ``would_<action>``."""
    kind: str | None
    """The proposal's record kind; None for an item without a proposal (a lapsed statement)."""
    content: str | None
    """The proposal's text."""
    key: str | None
    """The proposal's structured key (``preference.diet.sugar.general``), if any."""
    target_id: str | None
    """The existing record the item supports, supersedes, promotes or disables."""
    reason: str | None
    """Why: the guard's reason, else the scoring decision, else the plan's reason."""
    confidence: float | None
    """The confidence scoring gave the item."""
    source_event_ids: tuple[str, ...]
    """The events the proposal was drawn from."""


@dataclasses.dataclass(frozen=True, slots=True)
class ReflectionReport(_Result):
    """What one reflection run of one user did (:meth:`tianma.Runtime.reflect`)."""

    run_id: str
    """The run; ``undo_reflection(run_id)`` undoes it (a dry run writes no run)."""
    user_id: str
    trigger: str
    """``manual``, ``nightly``, ``dialogues``, ``messages`` or ``negative``."""
    dry_run: bool
    """Nothing was written; outcomes are ``would_<action>``."""
    window_events: int
    """How many of the user's messages the run reflected on."""
    counts: Mapping[str, int]
    """Outcome → how many items had it (``created_active``, ``supported``, ``superseded`` …)."""
    items: tuple[ReflectionItem, ...]
    """Every plan item with its outcome, in plan order."""
    llm: Mapping[str, Any]
    """What the model call did: ``called``, ``skipped`` (why not), ``attempts``, ``dropped``,
    ``error``, tokens, ``ignored_items``, ``contradictions``, ``regression`` (the gate's report) …"""


@dataclasses.dataclass(frozen=True, slots=True)
class AbDecision(_Result):
    """Of two strategies for the same trigger tried enough, the worse one was disabled."""

    kept: str
    """The better strategy's id."""
    disabled: str
    """The worse strategy's id."""
    reason: str
    """The comparison, in words."""


@dataclasses.dataclass(frozen=True, slots=True)
class MaintenanceReport(_Result):
    """One user's forgetting pass (:meth:`tianma.Runtime.maintain`), an undoable run."""

    run_id: str
    """The run; ``undo_reflection(run_id)`` restores every record it changed."""
    user_id: str
    decayed: tuple[str, ...]
    """Records that lost confidence (idle for a decay period or more)."""
    inactive: tuple[str, ...]
    """Records that became too weak and went inactive (restorable)."""
    ab: tuple[AbDecision, ...]
    """The A/B decisions between strategies."""


@dataclasses.dataclass(frozen=True, slots=True)
class AggregationReport(_Result):
    """One user's feedback-aggregation pass (:meth:`tianma.Runtime.aggregate_signals`)."""

    user_id: str
    seen: int
    """Signals looked at (recorded up to the pass, not archived before)."""
    weak: int
    """Of them, those below the write threshold."""
    weak_by_type: Mapping[str, int]
    """Signal type → how many of the weak ones had it."""
    merged: tuple[str, ...]
    """Ids of the merged signals the pass created."""
    credited: Mapping[str, float]
    """Record id → its new confidence after the merged signals were credited."""
    archived: int
    """Signals marked archived (the ones seen and the merged ones)."""


# -- weekly behaviour review ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class TopicStats(_Result):
    """A week's statistics of one topic."""

    topic: str
    """Its domain (``finance``), else its most frequent content noun."""
    dialogues: int
    turns: int
    avg_turns: float
    """Turns per dialogue."""
    interruption_rate: float
    """Share of its turns the user interrupted."""
    repeats: int
    """Questions asked again in a later dialogue (``repeat`` signals)."""
    emotion: Mapping[str, int]
    """``positive``, ``negative`` → signals of that emotion; ``neutral`` → turns judged by neither."""
    hours: Mapping[int, int]
    """Hour of the day (UTC of the turns) → turns."""


@dataclasses.dataclass(frozen=True, slots=True)
class LateStats(_Result):
    """Late dialogues (most turns at or after 22:00 or before 06:00) against the rest."""

    turns: int
    late_turns: int
    late_share: float
    """``late_turns / turns``."""
    late_dialogues: tuple[str, ...]
    late_negative_rate: float
    """Negative signals per turn in the late dialogues."""
    other_negative_rate: float
    """Negative signals per turn in the others."""


@dataclasses.dataclass(frozen=True, slots=True)
class BehaviourProposal(_Result):
    """A behaviour strategy the weekly review proposed, and whether it was queued."""

    content: str
    """The strategy's action."""
    topic: str | None
    """The topic it came from; None for the late-hours proposal."""
    scope: str
    zone: str
    """``caution`` or ``forbidden`` (a behaviour strategy is never ``free``)."""
    mode: str
    """``confirm`` or ``manual``: how the review waits for a human."""
    reason: str
    """The statistics behind it, in words."""
    trigger: Mapping[str, Any]
    """When the strategy applies (``{"domains": [...]}``, ``{"hours": [22, 6]}``)."""
    status: str
    """``queued``; ``already_open`` (the same text waits for review); ``already_active``."""
    review_id: str | None
    """Its review (the open one when ``already_open``); None when ``already_active``."""
    record_id: str | None
    """The pending strategy written; None unless ``queued``."""


@dataclasses.dataclass(frozen=True, slots=True)
class BehaviourReport(_Result):
    """One user's weekly behaviour review (:meth:`tianma.Runtime.weekly_review`)."""

    user_id: str
    since: datetime
    """Start of the week reviewed (``until`` less 7 days)."""
    until: datetime
    dialogues: int
    turns: int
    language: str
    """``zh`` or ``en``: the language most of the week was written in."""
    topics: tuple[TopicStats, ...]
    hours: Mapping[int, int]
    """Local hour (``timezone``) → turns."""
    timezone: str
    """The users' time zone the hours are counted in."""
    late: LateStats
    proposals: tuple[BehaviourProposal, ...]
    run_id: str | None
    """The undoable run that queued the new proposals; None when nothing new was queued."""

    def as_dict(self) -> dict[str, Any]:
        """The service's dict: ``since`` and ``until`` as ISO strings."""
        return {**_Result.as_dict(self), "since": self.since.isoformat(), "until": self.until.isoformat()}


# -- versions and review ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Version(_Result):
    """One version of a record (:meth:`tianma.Runtime.history`)."""

    version: int
    content: str
    confidence: float
    status: Status
    replaced_at: datetime | None
    """When a change replaced this version; None for the current one."""
    change_reason: str | None
    """Why it was replaced (``decay: …``, ``edited by the user: …``); None for the current one."""
    change_evidence: tuple[str, ...]
    """The events behind that change."""
    run_id: str | None
    """The run that replaced it (undoable); None for the current one."""
    current: bool = False
    """This is the record as it is now (the last of a history)."""

    def as_dict(self) -> dict[str, Any]:
        """The service's dict: ``current`` only on the current version."""
        d = _Result.as_dict(self)
        if not self.current:
            del d["current"]
        return d


@dataclasses.dataclass(frozen=True, slots=True)
class Review(_Result):
    """A learnt change that waits for a human, or the decision taken on it (a ``reviews`` row)."""

    id: str
    user_id: str
    record_id: str | None
    """The pending record; None when the candidate was rejected unwritten."""
    run_id: str | None
    """The run that proposed it."""
    kind: Kind
    content: str
    zone: str
    """``forbidden``, ``caution`` or ``free``."""
    mode: str
    """``manual``, ``confirm`` or ``rejected``."""
    reason: str
    """Why it waits (or was rejected)."""
    status: str
    """``pending``, ``approved`` or ``rejected``."""
    preview: Mapping[str, Any]
    """``before`` and ``after``: the active records it is compared with, without and with it; ``scope``."""
    evidence: tuple[str, ...]
    """The source events."""
    created_at: datetime
    decided_at: datetime | None
    decision: str | None
    """The reason given with the decision (else the verdict)."""
    decided_run: str | None
    """The run that applied the decision (undoable)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Decision(Review):
    """A review as just approved or rejected (:meth:`tianma.Runtime.approve`, ``reject``).

    It is the review row after the decision, except for ``run_id``: here the run that applied
    the decision (the same as ``decided_run``), not the one that proposed the change.
    """

    run_id: str
    """The run that applied the decision: ``undo_reflection(run_id)`` reverts it."""


@dataclasses.dataclass(frozen=True, slots=True)
class Rollback(_Result):
    """A record restored as it was at an earlier version (:meth:`tianma.Runtime.rollback`)."""

    run_id: str
    """The undoable run of the rollback."""
    record_id: str
    restored_version: int
    """The version whose content, confidence, status and data were restored."""
    version: int
    """The new version the restoration made."""


@dataclasses.dataclass(frozen=True, slots=True)
class Edit(_Result):
    """A person's edit of a learnt record (:meth:`tianma.Runtime.edit`)."""

    run_id: str
    """The undoable run of the edit."""
    record_id: str
    version: int
    """The new version the edit made."""
    content: str
    """The content written (stripped, PII redacted)."""
