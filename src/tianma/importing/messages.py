"""What every importer produces: messages in dialogue order, and the entries it could not read."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from tianma.storage.records import Role

Format = Literal["chatgpt", "openwebui", "jsonl"]
FORMATS: tuple[Format, ...] = ("chatgpt", "openwebui", "jsonl")


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    """One message of an old conversation, as it will be stored."""

    external_id: str
    """Stable across exports of the same history (the source's own message id where it has one):
    a re-import finds it stored and adds nothing."""
    dialogue_id: str
    role: Role
    text: str
    at: datetime
    """When it was said (aware; a naive time in the file is read in the user's zone)."""
    position: str
    """Where it is in the file, for the report ("line 12", "conversation 3, message 5")."""
    title: str | None = None
    """The conversation's title, when the source has one."""
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """An entry that was skipped, and why."""

    position: str
    reason: str


@dataclass(slots=True)
class Parsed:
    """A file read: its messages (oldest dialogue first, each in order) and what was skipped."""

    format: Format
    messages: list[ImportedMessage] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    """Malformed entries (the rest of the file is still imported)."""
    ignored: int = 0
    """Entries that are no conversation message (system prompts, tool output, hidden context)."""
    owners: set[str] = field(default_factory=set)
    """The source's ids of the people whose chats these are (Open WebUI's ``user_id``)."""


def content_id(*parts: str) -> str:
    """A short stable id from the parts of a message that has no id of its own."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]


MAX_SECONDS = 1e11
"""An epoch time above this (the year 5138) is in milliseconds."""


def epoch(value: object) -> datetime | None:
    """An epoch time (seconds, or milliseconds as some exports write them) as an aware datetime."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        return None
    seconds = float(value) / 1000 if value > MAX_SECONDS else float(value)
    if seconds > MAX_SECONDS:
        return None
    return datetime.fromtimestamp(seconds, UTC)


def oldest_first(dialogues: list[list[ImportedMessage]]) -> list[ImportedMessage]:
    """The messages of each dialogue in order, dialogues by their first message (a stable sort)."""
    return [m for d in sorted((d for d in dialogues if d), key=lambda d: d[0].at) for m in d]
