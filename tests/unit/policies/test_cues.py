from __future__ import annotations

import pytest

from tianma.policies.cues import (
    CORRECTION_EXPLICIT,
    CORRECTION_WEAK,
    IMPATIENCE,
    PRAISE_EXPLICIT,
    Cue,
    detect_cue,
)

CASES: list[tuple[str, str | None, float | None]] = [
    # corrections
    ("不对，我要的是周六的", "correction", 0.9),
    ("不是这个意思", "correction", 0.9),
    ("你又错了", "correction", 0.9),
    ("你应该先问我预算", "correction", 0.8),
    ("我说的是上海，不是杭州", "correction", 0.8),
    ("不是价格问题，而是时间问题", "correction", 0.6),
    ("That's wrong.", "correction", 0.9),
    ("Not what I meant.", "correction", 0.9),
    ("No, I meant the other one.", "correction", 0.9),
    ("You should have asked me first.", "correction", 0.8),
    ("I said Tuesday, not Monday.", "correction", 0.8),
    ("Thanks, but that's wrong.", "correction", 0.9),
    ("是不是错了？", "correction", 0.45),
    # impatience: a weak negative
    ("算了", "impatience", 0.4),
    ("那算了吧", "impatience", 0.4),
    ("算了算了，我自己来", "impatience", 0.4),
    ("就这样吧", "impatience", 0.3),
    ("随便吧", "impatience", 0.4),
    ("不用了，谢谢", "impatience", 0.3),
    ("Forget it.", "impatience", 0.4),
    ("Never mind.", "impatience", 0.4),
    ("Whatever.", "impatience", 0.4),
    # praise
    ("谢谢，很有用", "praise", 0.9),
    ("太好了！", "praise", 0.7),
    ("完美", "praise", 0.7),
    ("Thanks, that helps!", "praise", 0.9),
    ("Perfect!", "praise", 0.7),
    ("Great answer.", "praise", 0.9),
    ("谢谢", "praise", 0.3),
    # weak at most: a story, a recommendation
    ("We went to Kyoto and you should see the temples there.", "correction", CORRECTION_WEAK),
    ("You should see it, it's beautiful.", "correction", CORRECTION_WEAK),
    # traps: no cue at all
    ("这个图形不对称", None, None),
    ("感觉不对劲", None, None),
    ("对不对？", None, None),
    ("我说错了，是周日", None, None),
    ("没错，就是这个", None, None),
    ("我算了一下，大概要三千块", None, None),
    ("我今天算了好久", None, None),
    ("错过了末班车", None, None),
    ("我觉得你应该会喜欢", None, None),
    ("随便聊聊", None, None),
    ("不用了解太多", None, None),
    ("Don't forget it.", None, None),
    ("Never mind the cost, just tell me.", None, None),
    ("Whatever you think is best.", None, None),
    ("不完美", None, None),
    ("完美吗？", None, None),
    ("Perfect timing, I was just asking.", None, None),
    ("Nobody is perfect.", None, None),
    ("That's not helpful.", None, None),
    ("No thanks.", None, None),
    ("帮我查一下明天的天气", None, None),
    ("", None, None),
]


@pytest.mark.parametrize(("text", "cue_type", "strength"), CASES, ids=[c[0] or "empty" for c in CASES])
def test_detect_cue(text: str, cue_type: str | None, strength: float | None) -> None:
    cue = detect_cue(text)
    if cue_type is None:
        assert cue is None
    else:
        assert cue is not None and cue.type == cue_type
        assert cue.strength == pytest.approx(strength)
        assert cue.evidence and cue.evidence in text


def test_corrections_outrank_impatience_which_stays_weak() -> None:
    assert CORRECTION_EXPLICIT > 0.5 > IMPATIENCE
    assert PRAISE_EXPLICIT == CORRECTION_EXPLICIT == 0.9  # the explicit-signal confidence


def test_on_a_tie_the_more_informative_cue_wins() -> None:
    assert detect_cue("谢谢，很有用，不过有一点不对") == Cue("correction", 0.9, "不对")


def test_the_strongest_cue_wins() -> None:
    cue = detect_cue("完美！就这样吧")
    assert cue is not None and cue.type == "praise"


@pytest.mark.parametrize(
    ("text", "strength"),
    [("你漏了价格，价格多少？", 0.6), ("还少了第三步没说", 0.6), ("You forgot the shipping cost.", 0.6),
     ("You left out the part about taxes", 0.6), ("好的，不过你没提到退货政策", 0.3)],
)
def test_asking_for_what_the_reply_left_out_is_a_negative_cue(text: str, strength: float) -> None:
    cue = detect_cue(text)
    assert cue is not None and (cue.type, cue.strength) == ("omission", strength)


def test_an_omission_is_a_negative_outcome_for_the_strategy_weights() -> None:
    from tianma.policies.credit import NEGATIVE
    from tianma.policies.exploration import Outcome, reward

    assert "omission" in NEGATIVE
    omitted = Outcome(None, False, False, False, follow_up=False, impatience=False, omission=True)
    healthy = Outcome(None, False, False, False, follow_up=True, impatience=False)
    assert reward(omitted) == 0.3 and reward(healthy) == 0.8
