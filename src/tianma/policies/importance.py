"""Importance of an extracted statement, and whether it earns a place in long-term memory.

Seed 001 §2.2–2.4 and §4.1 ask four things of a memory: that it is about *this* user (personal),
that it will serve again (reusable, not a passing mood: "最近别给我推价格高的" must not become
"the user only accepts cheap products"), that it is not bound to the moment, and that it made a
difference (the assistant acted on it). As a weighted sum, scaled by how sure the extraction is:

| term | when | weight |
|---|---|---|
| base | always | +0.15 |
| personal | ``profile.*`` / ``health.*`` (who the user is) | +0.30 |
| personal | ``preference.*`` / ``state.*`` (what the user wants or is going through) | +0.25 |
| personal | ``note.*`` (something the user asked to keep) | +0.15 |
| reusable | not time-bound, global scope | +0.30 |
| reusable | not time-bound, scene-qualified (``domain:*``) | +0.25 |
| safety | ``health.*`` (an allergy forgotten can hurt) | +0.10 |
| recurring | said before, in another turn or dialogue | +0.15 |
| action | it led to an action (a reminder set, a plan changed) | +0.15 |
| time-bound | only about now (今天, this week) | −0.35 |

``importance = clamp(sum × (0.5 + 0.5 × confidence), 0, 1)``; ``IMPORTANCE_THRESHOLD`` = 0.5.

So a plain explicit fact (我叫李明, confidence 0.85: 0.75 × 0.925 ≈ 0.69) and a plain like
(我喜欢猫, 0.7: 0.70 × 0.85 ≈ 0.60) are written; a scene-qualified like with 我 omitted
(最近迷上自制低糖奶茶, 0.65: 0.65 × 0.825 ≈ 0.54) just clears the bar; a time-bound statement
stays out, even when recurring and acted upon (今天别推贵的, 0.75: 0.05 × 0.875 ≈ 0.04, and
0.35 × 0.875 ≈ 0.31 with both bonuses; outside ``health.*`` no time-bound item can pass: at most
0.15 + 0.30 − 0.35 + 0.30 = 0.40).
"""

from __future__ import annotations

from tianma.text.extract import Extracted

IMPORTANCE_THRESHOLD = 0.5
"""Statements scoring at least this are written to long-term memory (see the module table)."""

BASE = 0.15
PERSONAL_PROFILE = 0.30
PERSONAL_PREFERENCE = 0.25
PERSONAL_NOTE = 0.15
REUSABLE_GLOBAL = 0.30
REUSABLE_SCOPED = 0.25
SAFETY = 0.10
RECURRING = 0.15
ACTION = 0.15
TIME_BOUND_PENALTY = 0.35


def _personal(key: str) -> float:
    if key.startswith(("profile.", "health.")):
        return PERSONAL_PROFILE
    if key.startswith(("preference.", "state.")):
        return PERSONAL_PREFERENCE
    return PERSONAL_NOTE


def importance(item: Extracted, *, recurring: bool = False, led_to_action: bool = False) -> float:
    """How much a statement is worth remembering, in [0, 1].

    Args:
        item: the extracted statement.
        recurring: the user has said it before (another turn or dialogue).
        led_to_action: the assistant acted on it (set a reminder, changed a plan).

    Returns:
        The weighted sum of the module table, scaled by the item's confidence and clamped to [0, 1].
    """
    score = BASE + _personal(item.key)
    if item.time_bound:
        score -= TIME_BOUND_PENALTY
    else:
        score += REUSABLE_GLOBAL if item.scope == "global" else REUSABLE_SCOPED
    if item.key.startswith("health."):
        score += SAFETY
    if recurring:
        score += RECURRING
    if led_to_action:
        score += ACTION
    confidence = min(1.0, max(0.0, item.confidence))
    return round(min(1.0, max(0.0, score * (0.5 + 0.5 * confidence))), 4)


def should_write_long_term(item: Extracted, *, recurring: bool = False, led_to_action: bool = False) -> bool:
    """Whether the statement clears ``IMPORTANCE_THRESHOLD`` (a mood is not a preference)."""
    return importance(item, recurring=recurring, led_to_action=led_to_action) >= IMPORTANCE_THRESHOLD
