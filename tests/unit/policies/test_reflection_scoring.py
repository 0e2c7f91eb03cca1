"""Scoring a reflection's plan: the daily cap on reinforcements counts the users' local day."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from tests.fakes import strategy_record
from tianma.policies.promotion import REINFORCEMENTS_PER_DAY
from tianma.policies.reflection_scoring import score_plan

AT = datetime(2026, 5, 4, 17, tzinfo=UTC)  # 01:00 on 5 May in Beijing


def support_item() -> dict[str, Any]:
    return {"action": "support", "target_id": "s", "proposal": {"kind": "strategy", "content": "先给结论",
                                                                "source_event_ids": ["e-new"]}}  # fmt: skip


def test_the_reinforcement_cap_is_per_local_day() -> None:
    capped = {"support": {"runs": ["r"], "events": ["e-old"], "days": ["2026-05-04"],
                          "reinforced": {"2026-05-05": REINFORCEMENTS_PER_DAY}}}  # fmt: skip
    existing = {"s": strategy_record("s", "先给结论", data=capped)}
    days = {"e-new": date(2026, 5, 5)}
    [local] = score_plan([support_item()], existing, days, AT, ZoneInfo("Asia/Shanghai"))
    assert local["confidence"] == existing["s"].confidence  # 5 May there: already reinforced enough
    assert local["support"]["reinforced"] == {"2026-05-05": REINFORCEMENTS_PER_DAY}
    [utc] = score_plan([support_item()], existing, days, AT, UTC)  # still 4 May in UTC
    assert utc["confidence"] > existing["s"].confidence and utc["support"]["reinforced"]["2026-05-04"] == 1
