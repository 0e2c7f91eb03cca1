"""What the public API returns: turns, injected memories, applied strategies, ingest input."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tianma.errors import InvalidInputError


@dataclass(frozen=True, slots=True)
class InjectedMemory:
    """A memory placed in the prompt of a turn."""

    id: str
    kind: str
    content: str
    score: float
    source_event_ids: tuple[str, ...]
    """Where it came from; an event hit points at itself."""
    superseded_by: str | None = None
    """A resident statement shown marked as replaced by this newer statement (the prompt says so)."""
    later_on: str | None = None
    """A message shown as what the user said later on the subject of this resident statement
    (:mod:`tianma.memory.later_words`)."""


@dataclass(frozen=True, slots=True)
class AppliedStrategy:
    """A strategy placed in the prompt of a turn."""

    id: str
    content: str
    explored: bool
    """True when exploration chose it over the top strategy."""


@dataclass(frozen=True, slots=True)
class RedlineVerdict:
    """What the redline check did to a turn's reply."""

    verdict: str
    """``pass`` (no redline matched), ``amended`` (a note appended) or ``blocked`` (replaced)."""
    rules: tuple[str, ...] = ()
    """The ids of the redlines that matched (``builtin:…`` for the built-in ones)."""
    notes: tuple[str, ...] = ()
    """The notes appended to the reply."""


@dataclass(frozen=True, slots=True)
class TurnSignal:
    """An implicit signal a turn revealed about an earlier reply (a rephrase, a correction …)."""

    type: str
    target_event_id: str
    """The turn whose reply it judges."""
    confidence: float


@dataclass(frozen=True, slots=True)
class Turn:
    """The outcome of :meth:`tianma.Runtime.chat`."""

    reply: str
    event_id: str
    dialogue_id: str
    trace_id: str
    memories: tuple[InjectedMemory, ...] = ()
    strategies: tuple[AppliedStrategy, ...] = ()
    preferences: tuple[str, ...] = ()
    """Contents of the resident preferences in the prompt."""
    resident: tuple[InjectedMemory, ...] = ()
    """The resident items themselves, with where each came from: learnt preferences that still
    hold (kind ``preference``) and the user's current statements (kind ``event``)."""
    redline: RedlineVerdict | None = None
    """Verdict of the redline check (None when the turn failed before it)."""
    signals: tuple[TurnSignal, ...] = ()
    """Implicit signals this turn revealed about earlier ones."""
    reflection_run_id: str | None = None
    """The reflection this turn triggered (the learning triggers, ``learning.*``), if any."""
    stopped: bool = False
    """The client stopped the reply (``ClientTurn.stopped``): ``reply`` is what it was shown."""
    experiment: str | None = None
    """The online experiment running when the turn ran (``tianma experiment start``), if any."""
    arm: str | None = None
    """Its arm that served the turn (``baseline`` or a variant's name)."""


@dataclass(frozen=True, slots=True)
class ClientTurn:
    """A turn asked for by a chat client that keeps its own history (``tianma serve``).

    The client's messages are the prompt: tianma adds its identity and the memory block to the
    system prompt and keeps everything the client sent. ``Runtime.chat(..., client=…)``.
    """

    messages: tuple[dict[str, Any], ...]
    """The client's messages in Ollama's form (``role``, ``content``, optional ``images`` …),
    its own system prompt included, ending with this turn's user message."""
    stream: Callable[[list[dict[str, Any]]], Iterator[str]]
    """Asks the model with the final messages and yields the reply's text pieces.

    Raises ChatModelUnavailableError (or a subclass) when the model fails."""
    release: Callable[[str], None] | None = None
    """Receives the reply as it clears the redline check, sentence by sentence; None when
    the client waits for the whole reply."""
    event_id: str | None = None
    """The id the turn's event will have (announced to the client before the reply ends)."""
    stopped: Callable[[], bool] | None = None
    """True once the client has gone away mid-reply (the user pressed stop): the model is read
    no further and the turn records the reply the user saw."""
    regenerates: str | None = None
    """The event whose reply this turn replaces (the client's regenerate): no new event is
    recorded, the old reply gets a weak ``regenerate`` signal and then the new reply."""


class IngestEvent(BaseModel):
    """One past message for :meth:`tianma.Runtime.ingest`."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    role: Literal["user", "assistant"]
    text: str = Field(min_length=1)
    at: datetime
    dialogue_id: str = Field(min_length=1)
    speaker: str | None = None
    external_id: str | None = None


def parse_ingest_events(events: list[dict[str, Any]] | Any) -> list[IngestEvent]:
    """Validate events for ingest; one error names every bad event and field.

    Raises:
        InvalidInputError: an event is malformed.
    """
    if not isinstance(events, list | tuple):
        raise InvalidInputError("ingest expects a list of event dicts")
    parsed, problems = [], []
    for i, raw in enumerate(events):
        try:
            parsed.append(IngestEvent.model_validate(raw))
        except ValidationError as exc:
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"]) or "event"
                problems.append(f"event {i}: {where}: {err['msg']}")
    if problems:
        shown = "; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else "")
        raise InvalidInputError(f"invalid events: {shown}")
    return parsed
