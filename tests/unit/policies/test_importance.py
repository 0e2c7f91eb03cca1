from __future__ import annotations

from dataclasses import replace

import pytest

from tianma.policies.importance import IMPORTANCE_THRESHOLD, importance, should_write_long_term
from tianma.text.extract import Extracted, extract_statements


def _one(text: str) -> Extracted:
    [item] = extract_statements(text)
    return item


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("我叫李明", True),
        ("我对花生过敏", True),
        ("以后周末别给我安排提醒", True),
        ("我喜欢猫", True),
        ("最近迷上自制低糖奶茶", True),
        ("I prefer short answers.", True),
        ("记住，我周六上午要交周报", True),
        ("今天别推贵的", False),
        ("This week I'm busy.", False),
        ("我今天不吃辣", False),
    ],
)
def test_should_write_long_term(text: str, written: bool) -> None:
    assert should_write_long_term(_one(text)) is written


def test_threshold_is_documented_value() -> None:
    assert IMPORTANCE_THRESHOLD == 0.5


def test_scores_stay_in_unit_interval() -> None:
    item = _one("我对花生过敏")
    assert importance(replace(item, confidence=1.0), recurring=True, led_to_action=True) == 1.0
    assert importance(replace(_one("今天别推贵的"), confidence=0.0)) >= 0.0


def test_personal_facts_outrank_preferences_which_outrank_notes() -> None:
    fact = replace(_one("我叫李明"), confidence=0.9)
    pref = replace(_one("我喜欢猫"), confidence=0.9)
    note = replace(_one("记住，我周六上午要交周报"), confidence=0.9)
    assert importance(fact) > importance(pref) > importance(note)


def test_time_bound_lowers_and_no_bonus_rescues_it() -> None:
    item = _one("今天别推贵的")
    lasting = replace(item, time_bound=False)
    assert importance(item) < importance(lasting)
    assert not should_write_long_term(replace(item, confidence=1.0), recurring=True, led_to_action=True)


def test_recurrence_and_action_raise_importance() -> None:
    item = _one("我喜欢猫")
    base = importance(item)
    assert base < importance(item, recurring=True) == importance(item, led_to_action=True)
    assert importance(item, recurring=True, led_to_action=True) > importance(item, recurring=True)


def test_action_can_lift_a_borderline_item_over_the_threshold() -> None:
    weak = replace(_one("我喜欢猫"), confidence=0.3)
    assert not should_write_long_term(weak)
    assert should_write_long_term(weak, led_to_action=True)


def test_scene_qualified_counts_slightly_less_than_global() -> None:
    item = _one("在家我不喝酒")
    assert importance(item) < importance(replace(item, scope="global"))


def test_confidence_scales_the_score() -> None:
    item = _one("我住在杭州")
    assert importance(replace(item, confidence=0.4)) < importance(replace(item, confidence=0.95))
