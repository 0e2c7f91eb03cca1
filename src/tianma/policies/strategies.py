"""Which strategies and resident preferences a turn loads (pure functions)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from tianma.storage.records import MemoryRecord
from tianma.text.tokenize import token_set

MAX_STRATEGIES = 5
MAX_PREFERENCES = 5


def trigger_matches(trigger: dict[str, Any], domain: str, message: str, at: datetime, zone: tzinfo) -> bool:
    """Whether a strategy's trigger fits this turn; an empty trigger always fits.

    ``trigger`` may hold ``domains`` (any), ``keywords`` (any, tokenised like search) and
    ``hours`` (``[start, end)`` in local hours of ``zone``, the users' time zone; ``[22, 6]``
    wraps past midnight).
    """
    domains = trigger.get("domains") or []
    if domains and domain not in domains:
        return False
    keywords = [k.lower() for k in trigger.get("keywords") or []]
    if keywords:
        tokens = token_set(message)
        lowered = message.lower()
        if not any(k in tokens or k in lowered for k in keywords):
            return False
    hours = trigger.get("hours")
    if hours:
        start, end = int(hours[0]), int(hours[1])
        hour = at.astimezone(zone).hour
        inside = start <= hour < end if start <= end else (hour >= start or hour < end)
        if not inside:
            return False
    return True


def select_strategies(
    strategies: Sequence[MemoryRecord], domain: str, message: str, at: datetime, zone: tzinfo
) -> list[MemoryRecord]:
    """Enabled, non-redline strategies whose triggers fit (hours in ``zone``), by priority then weight."""
    fitting = [
        s
        for s in strategies
        if s.status == "active"
        and not s.data.get("redline")
        and trigger_matches(s.data.get("trigger") or {}, domain, message, at, zone)
    ]
    fitting.sort(
        key=lambda s: (-float(s.data.get("priority", 0)), -float(s.data.get("weight", s.confidence)))
    )
    return fitting[:MAX_STRATEGIES]


def redline_rules(strategies: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """Active strategies that are output redlines."""
    return [s for s in strategies if s.status == "active" and s.data.get("redline")]


def resident_preferences(preferences: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """Active long-term preferences, most confident first: resident in every prompt."""
    active = [p for p in preferences if p.status == "active"]
    active.sort(key=lambda p: (-p.confidence, p.created_at))
    return active[:MAX_PREFERENCES]


def in_rollout(strategy: MemoryRecord, dialogue_id: str, at: datetime) -> bool:
    """Gray release: a newly activated strategy applies to a share of dialogues until its
    ``rollout.until``, then to all. The share is decided per (strategy, dialogue), stably."""
    rollout = strategy.data.get("rollout")
    if not rollout or at >= datetime.fromisoformat(str(rollout["until"])):
        return True
    digest = hashlib.blake2b(f"{strategy.id}|{dialogue_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < float(rollout["share"])
