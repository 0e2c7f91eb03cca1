"""Zones and application modes of a learnt change (seed 000 §3.1/§3.3).

*forbidden* — it touches identity, safety rules, privacy or the forbidden list (a term of the
constitution's ``forbidden_terms``): never applied automatically, queued for a human.
*caution* — style, length, depth, order, tools, humour (``caution_terms``): applied after one
approval, with a before/after preview, versioned.
*free* — small scene-specific preferences, display format: automatic.

Scope decides too, for behaviour changes (strategies): global → manual approval; one scene
(``domain:*``) → preview + one confirmation, except a free-zone change, which is exactly the
"small scene-specific preference" the free zone lets through; one dialogue (``dialogue:*``) →
automatic. Statements the user made about themselves (facts,
preferences, experiences) are memory, not behaviour: their own gates (two reflections,
evidence on two days) apply, and only the forbidden zone sends them to a human.
"""

from __future__ import annotations

import unicodedata
from typing import Literal

from tianma.guardrails.constitution import Constitution
from tianma.guardrails.content_filter import check_candidate
from tianma.guardrails.injection import detect_injection

Zone = Literal["forbidden", "caution", "free"]
Mode = Literal["auto", "confirm", "manual"]


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def classify(text: str, constitution: Constitution) -> tuple[Zone, str]:
    """The zone of a candidate's text and the term that decided it ("" for free)."""
    folded = _fold(text)
    for term in constitution.forbidden_terms:
        if term and term in folded:
            return "forbidden", term
    for term in constitution.caution_terms:
        if term and term in folded:
            return "caution", term
    return "free", ""


def scope_mode(scope: str) -> Mode:
    """Application by impact: global → manual, one scene → confirm, one dialogue → auto."""
    if scope.startswith("dialogue:"):
        return "auto"
    if scope.startswith("domain:"):
        return "confirm"
    return "manual"


def mode_for(kind: str, zone: Zone, scope: str) -> Mode:
    """How a candidate of ``kind`` in ``zone`` with ``scope`` may be applied."""
    if zone == "forbidden":
        return "manual"
    if kind != "strategy":
        return "auto"
    by_scope = scope_mode(scope)
    if by_scope == "confirm" and zone == "free":
        return "auto"
    return by_scope


def may_stand_as_stated(text: str, constitution: Constitution) -> str | None:
    """Why a user's own words may not sit in the prompt as a current statement, or None.

    A statement event goes into the prompt without passing through reflection's guard, so the
    same three checks apply to it here: a planted instruction, content that mocks, is vulgar or
    over-promises, and anything in the forbidden zone (identity, safety, privacy) is kept as a
    plain event of the log only.
    """
    verdict = detect_injection(text)
    if verdict.is_attack:
        return f"planted instruction ({', '.join(verdict.reasons)})"
    filtered = check_candidate(text)
    if filtered.rejected:
        return f"content filter ({filtered.reason})"
    zone, term = classify(text, constitution)
    return f"forbidden zone (“{term}”)" if zone == "forbidden" else None
