from __future__ import annotations

from tianma.guardrails.stream_gate import MAX_HOLD, StreamGate, tail_after


def _gate(blocked_word: str | None = None) -> tuple[StreamGate, list[str], list[str]]:
    released: list[str] = []
    checked: list[str] = []

    def passes(text: str) -> bool:
        checked.append(text)
        return blocked_word is None or blocked_word not in text

    return StreamGate(passes, released.append), released, checked


def test_text_is_released_per_sentence_after_a_check_of_everything_so_far() -> None:
    gate, released, checked = _gate()
    for piece in ["今天", "天气", "很好。", "We go", " out. Then", " home"]:
        assert gate.feed(piece)
    assert released == ["今天天气很好。", "We go out."]
    assert gate.finish()
    assert released[-1] == " Then home"
    assert checked == ["今天天气很好。", "今天天气很好。We go out.", "今天天气很好。We go out. Then home"]
    assert "".join(released) == gate.text == gate.released


def test_a_blocked_sentence_is_never_released_and_stops_the_gate() -> None:
    gate, released, _ = _gate("炸药")
    assert gate.feed("第一句。")
    assert not gate.feed("第二句讲炸药。")
    assert not gate.feed("第三句。") and not gate.finish()
    assert released == ["第一句。"] and gate.blocked
    assert gate.text == "第一句。第二句讲炸药。"  # what the model said until the block (for the record)


def test_long_text_without_a_sentence_end_is_released_at_max_hold() -> None:
    gate, released, _ = _gate()
    gate.feed("字" * (MAX_HOLD - 1))
    assert released == []
    gate.feed("字")
    assert released == ["字" * MAX_HOLD]


def test_a_decimal_point_is_not_a_sentence_end() -> None:
    gate, released, _ = _gate()
    gate.feed("圆周率约 3.14")
    assert released == []


def test_tail_after() -> None:
    assert tail_after("答案。", "答案。\n\n风险提示") == "\n\n风险提示"
    assert tail_after("答案。", "安全回复") == "\n\n安全回复"
    assert tail_after("", "安全回复") == "安全回复"
    assert tail_after("答案。", None) == ""
