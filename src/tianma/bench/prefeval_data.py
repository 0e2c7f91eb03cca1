"""PrefEval (ICLR 2025) as benchmark documents: one user per item, preference first, then distractors.

PROTOCOL.md §2, PrefEval's own layout: each item is a fresh user whose history starts with the
preference (explicit: the stated preference and the reply "Noted."; implicit: the item's own
conversation), followed by the first N user/assistant pairs of the shared LMSYS-style
conversations in ``filtered_inter_turns.json``. The question is asked afterwards; the gold is
the preference turn (explicit) or every user turn of the item's conversation (implicit).

The data's licence is non-commercial: it is read from the eval-data folder, never copied.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from tianma.bench.systems import Doc
from tianma.errors import InvalidInputError

FORMS = ("explicit", "choice-based", "persona-driven")
"""The three ways a preference is expressed, in report order."""
FORM_DIRS = {
    "explicit": "explicit_preference",
    "choice-based": "implicit_preference/choice-based",
    "persona-driven": "implicit_preference/persona-driven",
}
DISTRACTORS = "filtered_inter_turns.json"
START = datetime(2025, 1, 1, tzinfo=UTC)
"""The first turn's time; every later turn is one minute on (recency must not see wall-clock time)."""
STEP = timedelta(minutes=1)
NOTED = "Noted."
"""The assistant's reply to an explicitly stated preference (PrefEval's layout)."""
PREFERENCE_DIALOGUE = "pref"

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    text: str


@dataclass(frozen=True, slots=True)
class Pair:
    """One distractor exchange and the conversation (``d<k>``) it belongs to."""

    user: str
    assistant: str
    conversation: int


@dataclass(frozen=True, slots=True)
class Item:
    """One preference/question pair with the turns that express the preference."""

    form: str
    topic: str
    index: int
    """Position in its topic file (items are taken from the start of each file)."""
    question: str
    preference: str
    turns: tuple[Message, ...]

    @property
    def key(self) -> str:
        """The item's user id and doc-id prefix: ``<form>/<topic>/<index>``."""
        return f"{self.form}/{self.topic}/{self.index}"

    @property
    def gold(self) -> frozenset[str]:
        """The user turns of the preference part (explicit: the one stated preference)."""
        return frozenset(f"{self.key}:{i}" for i, m in enumerate(self.turns) if m.role == "user")


def build_docs(item: Item, pairs: Sequence[Pair], n: int) -> tuple[Doc, ...]:
    """The item's history: its preference turns, then the first ``n`` distractor pairs.

    Ids are ``<key>:<position>``, times one minute apart from :data:`START`; the preference
    turns form dialogue ``pref``, the k-th distractor conversation ``d<k>``.
    """
    messages: list[tuple[Role, str, str]] = [(m.role, m.text, PREFERENCE_DIALOGUE) for m in item.turns]
    for p in pairs[:n]:
        dialogue = f"d{p.conversation}"
        messages += [("user", p.user, dialogue), ("assistant", p.assistant, dialogue)]
    return tuple(
        Doc(id=f"{item.key}:{i}", text=text, role=role, at=START + i * STEP, dialogue=dialogue)
        for i, (role, text, dialogue) in enumerate(messages)
    )


def frozen_at(docs: Sequence[Doc]) -> datetime:
    """The benchmark clock: the last turn + 1 day."""
    return max(d.at for d in docs) + timedelta(days=1)


def _text(value: Any, where: str) -> str:
    """A non-empty string, stripped (tianma's ingest strips too, so every system sees one string)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} is not a non-empty string")
    return value.strip()


def _turns(form: str, raw: dict[str, Any]) -> tuple[Message, ...]:
    if form == "explicit":
        return (Message("user", _text(raw["preference"], "preference")), Message("assistant", NOTED))
    conv = raw["conversation"]
    if form == "choice-based":
        return (
            Message("user", _text(conv["query"], "conversation.query")),
            Message("assistant", _text(conv["assistant_options"], "conversation.assistant_options")),
            Message("user", _text(conv["user_selection"], "conversation.user_selection")),
            Message(
                "assistant", _text(conv["assistant_acknowledgment"], "conversation.assistant_acknowledgment")
            ),
        )
    out: list[Message] = []
    for key in sorted(conv, key=int):
        out.append(Message("user", _text(conv[key]["user"], f"conversation.{key}.user")))
        out.append(Message("assistant", _text(conv[key]["assistant"], f"conversation.{key}.assistant")))
    if not out:
        raise ValueError("conversation is empty")
    return tuple(out)


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise InvalidInputError(f"PrefEval data not found: {path} / 找不到 PrefEval 数据")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: not JSON ({exc}) / 不是有效的 JSON") from exc


def topics(root: Path) -> list[str]:
    """Topics (file stems) present in all three forms, sorted.

    Raises:
        InvalidInputError: a form's folder is missing, or no topic is in all three.
    """
    found: set[str] | None = None
    for form in FORMS:
        folder = root / FORM_DIRS[form]
        if not folder.is_dir():
            raise InvalidInputError(f"PrefEval: no folder {folder} / 缺少 PrefEval 目录")
        stems = {p.stem for p in folder.glob("*.json")}
        found = stems if found is None else found & stems
    if not found:
        raise InvalidInputError(
            f"PrefEval: no topic file in all three forms under {root} / 没有共同的主题文件"
        )
    return sorted(found)


def load_topic(root: Path, form: str, topic: str, limit: int | None = None) -> list[Item]:
    """The first ``limit`` items (all when ``None``) of one topic file of one form.

    Raises:
        InvalidInputError: the file is missing or not PrefEval's schema for that form.
    """
    path = root / FORM_DIRS[form] / f"{topic}.json"
    raw = _read_json(path)
    try:
        if not isinstance(raw, list):
            raise TypeError("the file is not a list of items")
        return [
            Item(form, topic, i, _text(r["question"], "question"), _text(r["preference"], "preference"),
                 _turns(form, r))
            for i, r in enumerate(raw[:limit])
        ]  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidInputError(
            f"{path}: not PrefEval's {form} schema ({type(exc).__name__}: {exc}) / 不是 PrefEval 的数据格式"
        ) from exc


def load_items(root: Path, per_topic: int | None, only_topics: Sequence[str] | None = None) -> list[Item]:
    """The first ``per_topic`` items of each topic and form, interleaved.

    The order is item index, then topic, then form, so any prefix of the list (a system stopped
    by its time budget) still covers the three forms and many topics evenly.
    """
    chosen = list(only_topics) if only_topics is not None else topics(root)
    by_source = {(t, f): load_topic(root, f, t, per_topic) for t in chosen for f in FORMS}
    longest = max((len(v) for v in by_source.values()), default=0)
    return [
        by_source[(t, f)][i]
        for i in range(longest)
        for t in chosen
        for f in FORMS
        if i < len(by_source[(t, f)])
    ]


def load_distractors(root: Path) -> tuple[Pair, ...]:
    """Consecutive user→assistant message pairs of the distractor conversations, in file order.

    A message that does not start such a pair (none in the released file) is skipped.

    Raises:
        InvalidInputError: the file is missing or not a list of ``{"conversation": [...]}``.
    """
    path = root / DISTRACTORS
    raw = _read_json(path)
    pairs: list[Pair] = []
    try:
        if not isinstance(raw, list):
            raise TypeError("the file is not a list of conversations")
        for k, conv in enumerate(raw):
            msgs = [(str(m["role"]), m["content"]) for m in conv["conversation"]]
            i = 0
            while i < len(msgs) - 1:
                (role, text), (next_role, reply) = msgs[i], msgs[i + 1]
                if role == "user" and next_role == "assistant":
                    if isinstance(text, str) and isinstance(reply, str) and text.strip() and reply.strip():
                        pairs.append(Pair(text.strip(), reply.strip(), k))
                    i += 2
                else:
                    i += 1
    except (KeyError, TypeError) as exc:
        raise InvalidInputError(
            f"{path}: not PrefEval's distractor schema ({type(exc).__name__}: {exc}) / 干扰对话格式不对"
        ) from exc
    if not pairs:
        raise InvalidInputError(f"{path}: no user/assistant pair / 没有可用的对话")
    return tuple(pairs)


def by_count_and_form(rows: Sequence[dict[str, Any]]) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    """Result rows grouped by distractor count ``N`` (ascending) and form (in :data:`FORMS` order),
    empty groups left out."""
    for n in sorted({r["N"] for r in rows}):
        for form in FORMS:
            chosen = [r for r in rows if r["N"] == n and r["form"] == form]
            if chosen:
                yield n, form, chosen
