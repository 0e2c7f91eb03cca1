"""News of the moment holds for the day; a change in the user's life said the same way lasts."""

from __future__ import annotations

import pytest

from tianma.policies.momentary import happened_just_now, steps_away, tells_a_life_change
from tianma.policies.statements import classify_statement

# our own phrasings, none from a fixture or a benchmark
_MOMENT = [
    "Just finished mowing the lawn.",
    "Fixed the leaking tap finally.",
    "Burnt the toast finally, ha.",
    "The neighbour's cat knocked over my plant again.",
    "The bus broke down again, typical.",
    "刚洗完澡，舒服。",
    "刚刚吃了一碗牛肉面。",
    "到家了，回聊。",
    "gotta go, dinner's ready",
]
_LASTING = [
    "I just moved to Lisbon, so use euros.",
    "Just started a new job at the hospital, nights mostly.",
    "刚换了工作，在银行上班。",
    "刚搬到成都，以后推荐吃的按成都来。",
    "Just got a puppy, so dog-friendly places please.",
    "I'm eating meat again.",
    "刚需房，预算三百万以内。",
    "今年又考了个会计证。",
    "We finally switched the kids to one nap a day.",
    "It just felt right to go vegetarian.",
    "下班了不想动脑子 叫我小王就行",
    "I just need quick answers, nothing long.",
    "我刚查出来糖尿病，以后推荐菜少放糖。",
]


@pytest.mark.parametrize("text", _MOMENT)
def test_news_of_the_moment_holds_for_the_day(text: str) -> None:
    cue = classify_statement(text)
    assert cue is None or cue.period == "day", (text, cue)


@pytest.mark.parametrize("text", _LASTING)
def test_a_change_in_the_users_life_said_as_news_lasts(text: str) -> None:
    assert not happened_just_now(text) or "again" in text
    cue = classify_statement(text)
    assert cue is not None and cue.period is None, (text, cue)


@pytest.mark.parametrize("text", ["Brushing my teeth now, brb", "先去忙了 等会儿聊", "ok I'm back"])
def test_stepping_away_is_about_the_conversation(text: str) -> None:
    assert steps_away(text)
    cue = classify_statement(text)
    assert cue is None or cue.period == "day", (text, cue)


def test_again_about_the_user_is_a_change_not_news() -> None:
    assert happened_just_now("The dog chewed my slipper again.")
    assert not happened_just_now("I've cut out sugar again.")  # the user, not something that happened to them


@pytest.mark.parametrize("text", ["老板离职了，新来的经理要求周报全用英文", "Started at the bakery this week, so I'm up at 4 now",
                                  "搬到杭州了 以后推荐吃的按杭州来"])  # fmt: skip
def test_a_change_in_the_users_life_is_told_as_one(text: str) -> None:
    assert tells_a_life_change(text)


@pytest.mark.parametrize("text", ["Stuck in traffic, ugh.", "今天好困"])
def test_a_passing_state_tells_no_life_change(text: str) -> None:
    assert not tells_a_life_change(text)
