"""The fact-triple write rule: a date, place, amount or relationship that led to an action."""

from __future__ import annotations

import pytest

from tianma.text.action_facts import action_facts


@pytest.mark.parametrize(
    ("text", "content", "slots"),
    [
        ("我订了3月5日去杭州的机票。", "用户订了3月5日去杭州的机票", {"date", "place"}),
        ("我给我妈转了2000块", "用户给用户的妈转了2000块", {"amount", "relationship"}),
        ("提醒我下周三去医院复查", "用户要求提醒：下周三去医院复查", {"date", "place"}),
        ("我刚报名了5月20日的马拉松", "用户刚报名了5月20日的马拉松", {"date"}),
        (
            "I booked a flight to Tokyo on March 5.",
            "The user booked a flight to Tokyo on March 5",
            {"date", "place"},
        ),
        (
            "Remind me to call my mom on Friday",
            "The user asked to be reminded to call the user's mom on Friday",
            {"date", "relationship"},
        ),
        ("I paid $300 for the repair", "The user paid $300 for the repair", {"amount"}),
    ],
)
def test_an_action_with_a_fact_slot_is_kept(text: str, content: str, slots: set[str]) -> None:
    (fact,) = action_facts(text)
    assert fact.content == content
    assert set(fact.slots) == slots
    assert fact.key.startswith("event.")


@pytest.mark.parametrize(
    "text",
    [
        "杭州挺好的",  # a slot, no action
        "我买了点东西",  # an action, no slot
        "你订了3月5日的机票吗？",  # a question
        "如果我订了3月5日的票会怎样",  # a hypothetical
        "他订了3月5日去杭州的机票",  # someone else's action
        "She booked a trip to Paris on May 3",
        "I like Tokyo",
        "我朋友说我订了3月5日的票",  # hearsay
    ],
)
def test_nothing_without_an_asserted_first_person_action_and_a_slot(text: str) -> None:
    assert action_facts(text) == []


def test_the_same_statement_has_the_same_key() -> None:
    (a,) = action_facts("我订了3月5日去杭州的机票")
    (b,) = action_facts("我订了3月5日去杭州的机票！")
    assert a.key == b.key
