from __future__ import annotations

import pytest

from tianma.policies.signals import CONFIDENCE, detect_repeat, detect_rephrase, is_question
from tianma.text.tokenize import token_set


def test_confidence_table_matches_the_design() -> None:
    assert CONFIDENCE == {
        "like": 0.9,
        "dislike": 0.9,
        "correction": 0.9,
        "resubmit": 0.6,
        "repeat": 0.5,
        "silence": 0.3,
        "regenerate": 0.3,
    }


@pytest.mark.parametrize("text", ["周六有什么安排？", "我叫什么名字", "When is my flight", "能不能便宜点"])
def test_questions(text: str) -> None:
    assert is_question(text)


@pytest.mark.parametrize("text", ["以后周末别给我安排提醒", "I prefer short answers."])
def test_statements(text: str) -> None:
    assert not is_question(text)


def test_rephrase_is_credited_to_the_previous_turn() -> None:
    sig = detect_rephrase(token_set("帮我推荐杭州的川菜馆"), token_set("推荐杭州川菜馆"), "ev-1")
    assert sig is not None and sig.type == "resubmit" and sig.target_event_id == "ev-1"
    assert sig.confidence == 0.6
    assert detect_rephrase(token_set("今天天气怎么样"), token_set("推荐杭州川菜馆"), "ev-1") is None
    assert detect_rephrase(token_set("推荐杭州川菜馆"), token_set("推荐杭州川菜馆"), None) is None


def test_repeat_needs_a_question_from_another_dialogue() -> None:
    earlier = [("ev-old", "d-old", 0.85)]
    found = detect_repeat("我的航班是几点？", earlier, "d-now")
    assert found is not None and found.type == "repeat" and found.target_event_id == "ev-old"
    assert detect_repeat("我的航班是几点？", [("ev-same", "d-now", 0.95)], "d-now") is None
    assert detect_repeat("我的航班是几点？", [("ev-old", "d-old", 0.5)], "d-now") is None
    assert detect_repeat("好的谢谢", earlier, "d-now") is None
