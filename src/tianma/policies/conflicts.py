"""Load-time strategy conflicts (pure functions).

Two strategies *conflict* when they share a trigger (same domains, lower-cased keywords and
hours) and scope, and their actions are opposite. At equal priority both are disabled for the
turn and the pair is flagged for review; otherwise the higher priority wins, and at equal
priority across scopes the narrower scope wins (``dialogue:*`` > ``domain:*`` > ``global``).
Redlines are never touched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from tianma.policies.reflection import is_opposite, normalise
from tianma.storage.records import MemoryRecord

TriggerKey = tuple[frozenset[str], frozenset[str], tuple[int, ...] | None]

ANTONYMS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("简短", "简洁", "精简"), ("详细", "展开", "具体")),
    (("先给结论", "结论先行", "先说结论"), ("先讲过程", "先解释")),
    (("正式",), ("非正式", "轻松", "随意")),
    (("用中文", "中文回答"), ("用英文", "用英语", "英文回答")),
    (("多用表情", "用表情"), ("不用表情", "不要用表情", "别用表情", "少用表情")),
    (("short", "brief", "concise"), ("detailed", "in detail", "in depth", "in-depth", "thorough")),
    (("formal",), ("informal", "casual")),
    (("in english",), ("in chinese",)),
    (("conclusion first",), ("explain first", "explanation first")),
)
"""Pairs of opposite poles of an instruction; the longest match wins ("informal" ≠ "formal")."""

_CLAUSE_BREAK = re.compile(r"[,，。.;；!！?？:：、\n]|但是|而是|\bbut\b|\brather\b|\binstead\b")
_NEGATION = re.compile(r"不|别|没|勿|无需|\b(?:no|not|never|don't|do not|avoid|without)\b")


def trigger_key(trigger: dict[str, Any] | None) -> TriggerKey:
    """A trigger as comparable data: domains, lower-cased keywords, hours (``None`` if unset)."""
    trigger = trigger or {}
    domains = frozenset(str(d) for d in trigger.get("domains") or [])
    keywords = frozenset(str(k).strip().lower() for k in trigger.get("keywords") or [])
    hours = trigger.get("hours")
    return domains, keywords, tuple(int(h) for h in hours) if hours else None


def _stance(text: str, poles: tuple[tuple[str, ...], tuple[str, ...]]) -> int | None:
    """+1 for the first pole, −1 for the second, flipped when negated in its clause; ``None``
    when the text mentions neither or takes both sides."""
    hits: list[tuple[int, int, int]] = []  # (start, end, sign)
    for sign, terms in ((1, poles[0]), (-1, poles[1])):
        for term in terms:
            hits.extend((m.start(), m.end(), sign) for m in re.finditer(re.escape(term), text))
    hits.sort(key=lambda h: (h[0], -h[1]))  # leftmost first, then longest
    signs: set[int] = set()
    covered_until = -1
    for start, end, sign in hits:
        if start < covered_until:  # inside a longer term already counted
            continue
        covered_until = end
        prefix = text[:start]
        breaks = list(_CLAUSE_BREAK.finditer(prefix))
        clause = prefix[breaks[-1].end() :] if breaks else prefix
        signs.add(-sign if _NEGATION.search(clause) else sign)
    return signs.pop() if len(signs) == 1 else None


def opposite_actions(a: str, b: str) -> bool:
    """Whether two instructions pull opposite ways: one negates the other (``is_opposite``) or they
    take opposite poles of an antonym pair, negation included ("简短" vs "不要简短" / "详细")."""
    if normalise(a) == normalise(b):
        return False
    if is_opposite(a, b):
        return True
    la, lb = a.lower(), b.lower()
    for poles in ANTONYMS:
        sa, sb = _stance(la, poles), _stance(lb, poles)
        if sa is not None and sb is not None and sa != sb:
            return True
    return False


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two strategies with the same trigger and scope, opposite actions and equal priority."""

    a_id: str
    b_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a turn applies after resolving conflicts among its strategies."""

    kept: tuple[MemoryRecord, ...]
    """In order: priority desc, narrower scope first, weight desc, id."""
    disabled: tuple[MemoryRecord, ...]
    """Disabled for this turn: both sides of an equal-priority conflict."""
    conflicts: tuple[Conflict, ...]
    """Equal-priority conflicts, to flag for review."""
    overridden: tuple[tuple[str, str], ...]
    """``(winner_id, loser_id)`` where priority or a narrower scope decided."""


def scope_rank(scope: str) -> int:
    """How narrow a scope is: dialogue 2, domain 1, global (or unknown) 0."""
    if scope.startswith("dialogue:"):
        return 2
    return 1 if scope.startswith("domain:") else 0


def _priority(s: MemoryRecord) -> int:
    return int(s.data.get("priority", 0) or 0)


def _rank(s: MemoryRecord) -> tuple[int, int, float, str]:
    return (-_priority(s), -scope_rank(s.scope), -float(s.data.get("weight", s.confidence)), s.id)


def _opposed(a: MemoryRecord, b: MemoryRecord) -> bool:
    return trigger_key(a.data.get("trigger")) == trigger_key(b.data.get("trigger")) and opposite_actions(
        a.content, b.content
    )


def _conflict(a: MemoryRecord, b: MemoryRecord) -> Conflict:
    first, second = sorted((a.id, b.id))
    reason = f"same trigger and scope, opposite actions, equal priority {_priority(a)}"
    return Conflict(first, second, reason)


def resolve(strategies: Sequence[MemoryRecord]) -> Resolution:
    """Resolve opposite strategies loaded for one turn (see the module docstring).

    Strategies are taken in rank order; one outranked by an earlier opposite one (higher priority,
    or equal priority and narrower scope) is dropped; equal priority and same scope disables both.
    Scopes of equal rank that differ (two domains) do not overlap and are not compared. A winner
    disabled by its own conflict still outranks: the lower-priority side does not step in.
    """
    ordered = sorted(strategies, key=_rank)
    alive: list[MemoryRecord] = []  # kept or disabled, in rank order
    disabled: dict[str, MemoryRecord] = {}
    conflicts: list[Conflict] = []
    overridden: list[tuple[str, str]] = []
    for s in ordered:
        if s.data.get("redline"):
            alive.append(s)
            continue
        opponents = [t for t in alive if not t.data.get("redline") and _opposed(t, s)]
        winner = next(
            (t for t in opponents
             if _priority(t) > _priority(s)
             or (_priority(t) == _priority(s) and scope_rank(t.scope) > scope_rank(s.scope))),
            None,
        )  # fmt: skip
        if winner is not None:
            overridden.append((winner.id, s.id))
            continue
        alive.append(s)
        for t in opponents:
            if _priority(t) == _priority(s) and t.scope == s.scope:
                conflicts.append(_conflict(t, s))
                disabled.setdefault(t.id, t)
                disabled.setdefault(s.id, s)
    return Resolution(
        kept=tuple(s for s in alive if s.id not in disabled),
        disabled=tuple(s for s in alive if s.id in disabled),
        conflicts=tuple(conflicts),
        overridden=tuple(overridden),
    )


def find_conflicts(strategies: Sequence[MemoryRecord]) -> list[Conflict]:
    """Equal-priority conflicts among active, non-redline strategies, each pair once, by id."""
    active = sorted(
        (s for s in strategies if s.status == "active" and not s.data.get("redline")), key=lambda s: s.id
    )
    return [
        _conflict(a, b)
        for a, b in combinations(active, 2)
        if a.scope == b.scope and _priority(a) == _priority(b) and _opposed(a, b)
    ]
