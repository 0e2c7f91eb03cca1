from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from tianma.memory.shortterm import SUMMARY_KEYS, emotion_of, fold_window, split_turns


def window(turns: int) -> list:
    messages = []
    for i in range(turns):
        messages += [
            HumanMessage(f"第{i}个问题：杭州天气怎么样？", id=f"h{i}"),
            AIMessage(f"回答{i}", id=f"a{i}"),
        ]
    return messages


def test_nothing_folds_within_the_window() -> None:
    removals, summary, folded = fold_window(window(20), None, keep_turns=20, fold_turns=6)
    assert removals == [] and summary is None and folded == 0


def test_overflow_folds_the_oldest_six_turns_into_a_five_key_summary() -> None:
    removals, summary, folded = fold_window(window(21), None, keep_turns=20, fold_turns=6)
    assert folded == 6
    assert [r.id for r in removals] == [x for i in range(6) for x in (f"h{i}", f"a{i}")]
    assert summary is not None and tuple(summary) == SUMMARY_KEYS
    assert "杭州" in summary["topic"] and summary["decision"] == "回答5"


def test_turns_start_at_user_messages() -> None:
    assert [len(t) for t in split_turns(window(3))] == [2, 2, 2]


def test_impatience_is_not_satisfaction() -> None:
    assert emotion_of(["算了，就这样吧"]) == "impatient"
    assert emotion_of(["太好了，谢谢"]) == "satisfied"
    assert emotion_of(["不对，不是这个意思"]) == "dissatisfied"
