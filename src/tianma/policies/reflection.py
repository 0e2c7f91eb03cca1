"""Reflection planning as pure functions: proposals → merged with evidence → contradictions.

A *proposal* is one learnt item (from the rule-based extractor or the LLM, treated alike); a
*plan* says what publishing will do with it: create it, add support to an existing record,
supersede an old one, or disable a contradictory pair.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tianma.storage.records import Kind, MemoryRecord

Action = Literal["create", "support", "supersede", "disable"]
Similarity = Callable[[str, str], float]

SAME_MEANING = 0.92
"""Embedding similarity (cosine of passages) above which two contents say the same thing."""
SAME_MEANING_ACROSS_ORIGINS = 0.85
"""A rule item and an LLM item citing the same message, this close in meaning, are one item."""
SAME_KEY_MEANING = 0.97
"""Under one key, "回答简短一点" and "回答详细一点" embed alike: a change of mind, not support."""
_NEGATIONS = ("不要", "不", "别", "没", "勿", "never ", "don't ", "do not ", "not ", "no ")


@dataclass(frozen=True, slots=True)
class Proposal:
    """One learnt item proposed by a reflection."""

    kind: Kind
    content: str
    source_event_ids: tuple[str, ...]
    origin: Literal["rules", "llm"]
    key: str | None = None
    polarity: str | None = None
    scope: str = "global"
    replaces: str | None = None
    trigger: dict[str, Any] | None = None
    priority: int = 0
    confidence: float | None = None
    importance: float = 0.5


@dataclass(frozen=True, slots=True)
class PlanItem:
    action: Action
    proposal: Proposal | None
    target_id: str | None = None
    """The existing record supported, superseded or disabled."""
    reason: str = ""
    evidence: tuple[str, ...] = ()
    extra_targets: tuple[str, ...] = field(default=())


def normalise(text: str) -> str:
    """Lower-cased text without punctuation or spaces, for equality of meaning at its simplest."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"[\W_]+", "", folded)


def dedupe(proposals: Sequence[Proposal]) -> list[Proposal]:
    """One proposal per (kind, key, polarity) or per normalised content; sources are merged."""
    out: dict[tuple[str, str], Proposal] = {}
    for p in proposals:
        ident = (
            p.kind,
            f"{p.key}|{p.polarity}|{p.scope}|{normalise(p.content)}" if p.key else normalise(p.content),
        )
        if ident in out:
            kept = out[ident]
            merged = tuple(dict.fromkeys(kept.source_event_ids + p.source_event_ids))
            out[ident] = replace(kept, source_event_ids=merged)
        else:
            out[ident] = p
    return list(out.values())


_STATEMENT_KINDS = frozenset({"fact", "preference"})


def merge_origins(proposals: Sequence[Proposal], similar: Similarity) -> list[Proposal]:
    """The LLM restating what the rule pass already extracted from the same message is one item:
    the rule item (its key is deterministic) keeps both sources."""
    rules = [p for p in proposals if p.origin == "rules"]
    out = list(rules)
    for p in proposals:
        if p.origin == "rules":
            continue
        twin = next(
            (r for r in rules
             if r.kind in _STATEMENT_KINDS and p.kind in _STATEMENT_KINDS
             and set(r.source_event_ids) & set(p.source_event_ids)
             and has_negation(r.content) == has_negation(p.content)
             and similar(r.content, p.content) >= SAME_MEANING_ACROSS_ORIGINS),
            None,
        )  # fmt: skip
        if twin is None:
            out.append(p)
        else:
            i = out.index(twin)
            out[i] = replace(
                twin, source_event_ids=tuple(dict.fromkeys(twin.source_event_ids + p.source_event_ids))
            )
            rules[rules.index(twin)] = out[i]
    return out


def _same_item(p: Proposal, r: MemoryRecord, similar: Similarity) -> bool:
    if r.kind != p.kind:
        return False
    if p.key and r.key and r.key != p.key:
        return False
    if (
        p.key
        and r.key == p.key
        and p.polarity
        and r.data.get("polarity")
        and r.data["polarity"] != p.polarity
    ):
        return False
    if p.key and r.key == p.key:  # same subject: the same item only if it says the same thing
        return normalise(r.content) == normalise(p.content) or (
            has_negation(r.content) == has_negation(p.content)
            and similar(r.content, p.content) >= SAME_KEY_MEANING
        )
    if has_negation(r.content) != has_negation(p.content):  # "喜欢…" vs "不喜欢…" embed alike
        return False
    return normalise(r.content) == normalise(p.content) or similar(r.content, p.content) >= SAME_MEANING


def has_negation(text: str) -> bool:
    """Whether a statement is negative (不/别/没/don't/never …)."""
    lowered = f" {text.lower()} "
    return any(neg in lowered for neg in _NEGATIONS)


OPPOSITE_MEANING = 0.85
"""Close in meaning but one negates the other: "不喜欢吃辣" vs "喜欢吃辣的菜"."""


def _opposite_meaning(p: Proposal, r: MemoryRecord, similar: Similarity) -> bool:
    """Unkeyed statements of one kind that contradict each other by meaning."""
    if r.kind != p.kind or p.kind not in ("fact", "preference") or (p.key and r.key):
        return False
    if is_opposite(p.content, r.content):
        return True
    return (
        has_negation(p.content) != has_negation(r.content)
        and similar(r.content, p.content) >= OPPOSITE_MEANING
    )


def is_opposite(a: str, b: str) -> bool:
    """Whether one text is the other with a negation added (``推荐贵的`` / ``不要推荐贵的``)."""
    na, nb = normalise(a), normalise(b)
    if na == nb:
        return False
    for neg in _NEGATIONS:
        n = normalise(neg)
        if n and (na.replace(n, "", 1) == nb or nb.replace(n, "", 1) == na):
            return True
    return False


def merge_evidence(
    proposals: Sequence[Proposal],
    existing: Sequence[MemoryRecord],
    similar: Similarity,
    closed: Mapping[str, set[str]] | None = None,
) -> list[PlanItem]:
    """Support an existing record equal in meaning; otherwise create, noting the existing records
    that say the opposite (for :func:`detect_contradictions`).

    ``closed`` maps a record to the newer statements that closed what it was learnt from: such a
    statement never supports it — polarity is decided against the prior record, so a reversal
    that repeats the old words (“不用先给结论了”) is not a restatement. A proposal from it that
    reads like the record it closed is a misreading and is dropped; the statement itself holds.
    """
    closed = closed or {}
    plan = []
    for p in dedupe(proposals):
        revoked = [r for r in existing if set(p.source_event_ids) & closed.get(r.id, set())]
        if any(_same_item(p, r, similar) for r in revoked):
            continue
        match = next((r for r in existing if r not in revoked and _same_item(p, r, similar)), None)
        if match is None:
            opposite = tuple(r.id for r in existing if _opposite_meaning(p, r, similar))
            plan.append(
                PlanItem(
                    "create",
                    p,
                    reason=f"new {p.kind} from {p.origin}",
                    evidence=p.source_event_ids,
                    extra_targets=opposite,
                )
            )
        else:
            plan.append(
                PlanItem("support", p, match.id, "same meaning as an existing record", p.source_event_ids)
            )
    return plan


def detect_contradictions(
    plan: Sequence[PlanItem], existing: Sequence[MemoryRecord]
) -> tuple[list[PlanItem], list[dict[str, Any]]]:
    """Add supersessions (same key and scope, different content) and disable opposite strategies.

    Scene-qualified records (another key or scope) coexist. Returns the extended plan and the
    contradictions found, for the report.
    """
    out, found = list(plan), []
    for item in plan:
        p = item.proposal
        if item.action != "create" or p is None:
            continue
        for old in item.extra_targets:
            if old != p.replaces:
                out.append(PlanItem("supersede", p, old, "contradicted by meaning", p.source_event_ids))
                found.append({"type": "meaning", "old": old, "new": p.content})
        if p.replaces and any(r.id == p.replaces for r in existing):
            out.append(
                PlanItem("supersede", p, p.replaces, "replaced by a revised preference", p.source_event_ids)
            )
            found.append({"type": "replaces", "old": p.replaces, "new": p.content})
        for r in existing:
            if r.status not in ("active", "pending") or r.id == p.replaces:
                continue
            if p.key and r.key == p.key and r.scope == p.scope and r.kind in ("fact", "preference"):
                out.append(
                    PlanItem("supersede", p, r.id, f"superseded: same key {p.key}", p.source_event_ids)
                )
                found.append({"type": "key", "key": p.key, "old": r.content, "new": p.content})
            elif (
                p.kind == r.kind == "strategy"
                and _same_trigger(p.trigger, r.data.get("trigger"))
                and is_opposite(p.content, r.content)
                and p.priority == int(r.data.get("priority", 0))
            ):
                out.append(
                    PlanItem("disable", p, r.id, "opposite strategies of equal priority", p.source_event_ids)
                )
                found.append(
                    {
                        "type": "strategy",
                        "old": r.content,
                        "new": p.content,
                        "resolution": "both disabled",
                    }
                )
    return out, found


def _same_trigger(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    a, b = a or {}, b or {}
    keys_a = {str(k).lower() for k in a.get("keywords") or []} | set(a.get("domains") or [])
    keys_b = {str(k).lower() for k in b.get("keywords") or []} | set(b.get("domains") or [])
    return keys_a == keys_b or bool(keys_a & keys_b)
