"""Strategy triggers: an ``hours`` trigger means the users' local hours, DST included."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from tests.fakes import strategy_record
from tianma.policies.strategies import select_strategies, trigger_matches

NIGHT = {"hours": [22, 6]}
SHANGHAI, NEW_YORK = ZoneInfo("Asia/Shanghai"), ZoneInfo("America/New_York")


def test_an_hours_trigger_is_read_in_the_users_zone() -> None:
    at = datetime(2026, 5, 4, 15, 30, tzinfo=UTC)  # 23:30 in Beijing
    assert trigger_matches(NIGHT, "general", "hi", at, SHANGHAI)
    assert not trigger_matches(NIGHT, "general", "hi", at, UTC)
    assert not trigger_matches({"hours": [9, 17]}, "general", "hi", at, SHANGHAI)
    assert trigger_matches({"hours": [9, 17]}, "general", "hi", at, UTC)


def test_the_same_utc_hour_is_late_in_summer_and_not_in_winter_in_new_york() -> None:
    winter, summer = datetime(2026, 1, 15, 2, 30, tzinfo=UTC), datetime(2026, 7, 15, 2, 30, tzinfo=UTC)
    assert not trigger_matches(NIGHT, "general", "hi", winter, NEW_YORK)  # 21:30 EST
    assert trigger_matches(NIGHT, "general", "hi", summer, NEW_YORK)  # 22:30 EDT


def test_select_strategies_passes_the_zone_on() -> None:
    night = strategy_record("n", "22点后回答尽量简洁", data={"trigger": NIGHT})
    always = strategy_record("a", "先给结论", data={"trigger": {}})
    at = datetime(2026, 5, 4, 15, 30, tzinfo=UTC)
    assert {s.id for s in select_strategies([night, always], "general", "hi", at, SHANGHAI)} == {"n", "a"}
    assert [s.id for s in select_strategies([night, always], "general", "hi", at, UTC)] == ["a"]
