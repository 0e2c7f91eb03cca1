"""LoCoMo (ACL 2024) as benchmark documents and questions, normalised as PROTOCOL.md §1 says."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tianma.bench.systems import Doc
from tianma.errors import InvalidInputError

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
"""LoCoMo's own category codes (its evaluation code; snap-research/locomo#29)."""
DEV_CONVERSATION = "conv-26"
"""The only conversation tuned on; the other nine are the test set."""

_SESSION = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"^D:?(\d+):(\d+)$")


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    docs: tuple[Doc, ...]
    questions: tuple[Question, ...]
    skipped_questions: int
    """Questions left out because no evidence id matched a turn."""

    @property
    def frozen_at(self) -> datetime:
        """The benchmark clock: the last session's date + 1 day."""
        return max(d.at for d in self.docs) + timedelta(days=1)

    def session_of(self, dia_id: str) -> str:
        return dia_id.split(":", 1)[0]


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → an aware UTC datetime."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise InvalidInputError(f"LoCoMo: unreadable session date {text!r}") from exc


def normalise_evidence(raw: list[str], known: set[str]) -> frozenset[str]:
    """Split on ``;``/``,``/whitespace, accept ``D:1:3``, strip leading zeros, drop unknown ids."""
    out = set()
    for entry in raw:
        for part in re.split(r"[;,\s]+", entry):
            m = _DIA.match(part.strip())
            if m:
                dia = f"D{int(m.group(1))}:{int(m.group(2))}"
                if dia in known:
                    out.add(dia)
    return frozenset(out)


def turn_text(turn: dict[str, Any]) -> str:
    """The turn's words plus ``[shares <caption>]`` when it carried an image."""
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def conversation(sample: dict[str, Any]) -> Conversation:
    """One sample: its turns as documents (speaker A = user side) and its scored questions."""
    conv = sample["conversation"]
    speaker_a = conv["speaker_a"]
    sessions = sorted(int(m.group(1)) for key in conv if (m := _SESSION.match(key)))
    docs: list[Doc] = []
    for n in sessions:
        start = parse_session_date(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            docs.append(
                Doc(
                    id=turn["dia_id"],
                    text=turn_text(turn),
                    role="user" if turn["speaker"] == speaker_a else "assistant",
                    at=start + timedelta(seconds=30 * i),
                    dialogue=f"session_{n}",
                    speaker=turn["speaker"],
                )
            )
    known = {d.id for d in docs}
    questions, skipped = [], 0
    for qa in sample["qa"]:
        evidence = normalise_evidence(list(qa.get("evidence", [])), known)
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return Conversation(sample["sample_id"], tuple(docs), tuple(questions), skipped)


def load_locomo(path: Path, only: set[str] | None = None) -> list[Conversation]:
    """The conversations of ``locomo10.json`` (all, or those in ``only``), in file order.

    Raises:
        InvalidInputError: the file is missing or not LoCoMo's schema.
    """
    if not path.is_file():
        raise InvalidInputError(f"LoCoMo data not found: {path}")
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
        out = [conversation(s) for s in samples if only is None or s["sample_id"] in only]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"{path}: not LoCoMo's schema ({exc})") from exc
    if only is not None and {c.sample_id for c in out} != only:
        missing = sorted(only - {c.sample_id for c in out})
        raise InvalidInputError(f"{path}: no conversation {', '.join(missing)}")
    return out
