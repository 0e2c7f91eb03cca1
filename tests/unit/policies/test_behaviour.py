"""Weekly behaviour statistics: hours and late turns are the users' local ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from tianma.policies.behaviour import Signal, Turn, analyse, is_late

SHANGHAI = ZoneInfo("Asia/Shanghai")
MONDAY_15_UTC = datetime(2026, 3, 2, 15, tzinfo=UTC)  # 23:00 in Beijing


def test_late_is_decided_on_the_local_clock() -> None:
    assert is_late(MONDAY_15_UTC, SHANGHAI) and not is_late(MONDAY_15_UTC, UTC)
    assert not is_late(MONDAY_15_UTC - timedelta(hours=2), SHANGHAI)  # 21:00 there
    assert is_late(datetime(2026, 3, 2, 5, 59, tzinfo=UTC), UTC)
    assert not is_late(datetime(2026, 3, 2, 6, tzinfo=UTC), UTC)


def week_of_evenings() -> tuple[list[Turn], list[Signal]]:
    """Five evening dialogues of two turns (23:00 Beijing, the first judged impatient) and one
    daytime one."""
    turns, signals = [], []
    for day in range(5):
        at = MONDAY_15_UTC + timedelta(days=day)
        first, second = f"e{day}a", f"e{day}b"
        turns += [Turn(first, f"d{day}", "How do I fix this python code?", at),
                  Turn(second, f"d{day}", "The server still fails, why?", at + timedelta(minutes=2))]  # fmt: skip
        signals.append(Signal("impatience", f"d{day}", (second,), first))
    noon = MONDAY_15_UTC - timedelta(hours=11)  # 12:00 in Beijing
    turns += [
        Turn(f"n{i}", "noon", "How do I fix this python code?", noon + timedelta(minutes=i)) for i in range(2)
    ]
    return turns, signals


def test_the_weeks_hours_and_the_late_proposal_are_local() -> None:
    turns, signals = week_of_evenings()
    local = analyse(turns, signals, SHANGHAI)
    assert local.hours == {12: 2, 23: 10} and local.late["late_share"] == round(10 / 12, 3)
    [proposal] = local.proposals
    assert proposal.trigger == {"hours": [22, 6]} and "(Asia/Shanghai)" in proposal.reason
    utc = analyse(turns, signals, UTC)  # the same turns read in UTC are afternoon and night ones
    assert utc.hours == {4: 2, 15: 10} and utc.late["late_turns"] == 2 and utc.proposals == []
