"""The plain JSONL format: one message per line, for any history a script can write.

``{"dialogue": "trip-2024", "role": "user", "text": "...", "at": "2024-05-03T09:12:00+08:00"}``
with optional ``"speaker"`` (a name) and ``"id"`` (the message's own id: a re-import with the same
ids adds nothing; without one the id is made of the dialogue, role, time and text). A time
without an offset is read in the user's time zone. Lines are imported in file order within each
dialogue; blank lines and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, tzinfo
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tianma.importing.messages import ImportedMessage, Parsed, Problem, content_id

MAX_ID = 200
"""Longest own id a line may give (external ids are at most 255 characters)."""


class Line(BaseModel):
    """One line of the format."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    dialogue: str = Field(min_length=1, max_length=200)
    role: Literal["user", "assistant"]
    text: str = Field(min_length=1)
    at: str = Field(min_length=1)
    speaker: str | None = Field(default=None, max_length=255)
    id: str | None = Field(default=None, min_length=1, max_length=MAX_ID)


def parse(lines: Iterable[str], zone: tzinfo) -> Parsed:
    """Every well-formed line; each malformed one is reported with its line number."""
    out = Parsed("jsonl")
    for number, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"line {number}"
        try:
            line = Line.model_validate(json.loads(stripped))
        except json.JSONDecodeError as exc:
            out.problems.append(Problem(where, f"not JSON: {exc.msg}"))
            continue
        except ValidationError as exc:
            fields = ", ".join(f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors())
            out.problems.append(Problem(where, fields))
            continue
        when = _time(line.at, zone)
        if when is None:
            out.problems.append(Problem(where, f"at: not an ISO-8601 time: {line.at[:40]!r}"))
            continue
        key = line.id or content_id(line.dialogue, line.role, when.isoformat(), line.text)
        dialogue = "jsonl-" + (line.dialogue if len(line.dialogue) <= 48 else content_id(line.dialogue))
        out.messages.append(ImportedMessage(f"jsonl:{key}", dialogue, line.role, line.text, when, where,
                                            speaker=line.speaker))  # fmt: skip
    return out


def _time(text: str, zone: tzinfo) -> datetime | None:
    """An ISO-8601 time, aware (a naive one is in ``zone``)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=zone)
