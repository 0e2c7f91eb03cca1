"""Zones and application modes of a learnt change (DESIGN.md §5, seed 000 §3.1/§3.3).

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
