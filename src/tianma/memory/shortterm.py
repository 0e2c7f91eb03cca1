"""Short-term memory: the verbatim window and its rolling five-key summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage

from tianma.policies.signals import is_question
from tianma.text.tokenize import tokenize

SUMMARY_KEYS = ("topic", "user_view", "decision", "open_items", "emotion")
"""The five keys of the rolling summary."""

_IMPATIENT = ("算了", "就这样吧", "随便", "不用了", "whatever", "forget it", "never mind", "fine.")
_UNHAPPY = ("不对", "不是这个意思", "错了", "没用", "wrong", "not what i", "useless")
_HAPPY = ("谢谢", "太好了", "很好", "不错", "thanks", "thank you", "great", "perfect")


def split_turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """Group a window into turns, each starting at a user message."""
    turns: list[list[AnyMessage]] = []
    for msg in messages:
        if isinstance(msg, HumanMessage) or not turns:
            turns.append([msg])
        else:
            turns[-1].append(msg)
    return turns


def emotion_of(texts: Sequence[str]) -> str:
    """A coarse emotion marker: "算了" and "就这样吧" read as impatience, not satisfaction."""
    joined = " ".join(texts).lower()
    if any(w in joined for w in _IMPATIENT):
        return "impatient"
    if any(w in joined for w in _UNHAPPY):
        return "dissatisfied"
    if any(w in joined for w in _HAPPY):
        return "satisfied"
    return "neutral"


def summarise(turns: Sequence[Sequence[AnyMessage]], previous: dict[str, str] | None) -> dict[str, str]:
    """Deterministic five-key summary of folded turns merged into the previous summary."""
    user = [str(m.content) for t in turns for m in t if isinstance(m, HumanMessage)]
    bot = [str(m.content) for t in turns for m in t if isinstance(m, AIMessage)]
    words = Counter(tok for text in user for tok in tokenize(text) if len(tok) > 1)
    prev = previous or {}
    topic = "、".join(w for w, _ in words.most_common(5)) or prev.get("topic", "")
    open_items = [u for u in user[-3:] if is_question(u)]
    return {
        "topic": topic,
        "user_view": _clip(" / ".join(user[-2:]) or prev.get("user_view", "")),
        "decision": _clip(bot[-1] if bot else prev.get("decision", "")),
        "open_items": _clip(" / ".join(open_items)),
        "emotion": emotion_of(user),
    }


Summariser = Callable[[Sequence[Sequence[AnyMessage]], dict[str, str] | None], dict[str, str]]

REPLACE_EVERY = 20
"""The summary is rewritten from scratch once it covers this many folded turns."""


def fold_window(
    messages: Sequence[AnyMessage],
    summary: dict[str, str] | None,
    keep_turns: int,
    fold_turns: int,
    summariser: Summariser | None = None,
) -> tuple[list[RemoveMessage], dict[str, str] | None, int]:
    """When the window holds more than ``keep_turns`` turns, fold the oldest ``fold_turns``.

    ``summariser`` (default: the deterministic :func:`summarise`) merges the folded turns into the
    previous summary; pass ``None`` as previous to replace it wholesale.
    Returns the removals for the ``messages`` channel, the new summary and how many turns folded.
    """
    turns = split_turns(messages)
    if len(turns) <= keep_turns:
        return [], summary, 0
    count = max(fold_turns, len(turns) - keep_turns)
    folded = turns[:count]
    removals = [RemoveMessage(id=m.id) for t in folded for m in t if m.id is not None]
    return removals, (summariser or summarise)(folded, summary), count


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
