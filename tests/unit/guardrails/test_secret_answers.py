"""Security answers known only by the sentence around them (tianma.guardrails.secret_answers)."""

from __future__ import annotations

import pytest

from tianma.guardrails.secrets import find_secrets, redact_secrets


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("我妈的娘家姓是欧阳，银行密保就是这个，帮我记着", "欧阳"),
        ("第一只宠物叫豆豆，这是我邮箱的密保答案", "豆豆"),
        ("记一下：支付宝的密保答案 红烧肉", "红烧肉"),
        ("我的密保：出生医院——协和", "协和"),
        ("My first pet's name was Biscuit — that's the answer to my bank's security question.", "Biscuit"),
        ("Mother's maiden name for the bank is Kowalski, keep that for me", "Kowalski"),
        ("my secret answer for the email recovery question is purple elephant", "purple elephant"),
        ("security q: first car. answer: beetle. save it pls", "beetle"),
        ("Remember this: recovery question = childhood street, answer = Maple Drive", "Maple Drive"),
    ],
)
def test_an_answer_told_around_its_question_is_removed_with_its_sentence(text: str, value: str) -> None:
    redacted, found = redact_secrets(text)
    assert value not in redacted
    assert [f.kind for f in found] == ["security_answer"]


@pytest.mark.parametrize(
    "text",
    [
        "怎么设置密保问题？",
        "I forgot my security answer again, how do I reset it?",
        "Security questions are a weak way to protect accounts.",
        "my security question is first car but I've had three first cars depending how you count",
        "my security answer is the name of my first dog",
        "the answer to my security question is something only I know",
        "Divorce is final, back to my maiden name.",
        "密保问题我选的“我的小学” 结果我自己都忘了当时写的全称还是简称",
    ],
)
def test_talk_about_security_questions_keeps_its_words(text: str) -> None:
    assert find_secrets(text) == []


def test_a_sentence_an_exact_rule_already_cut_is_not_taken_again() -> None:
    text = "银行卡安全问题的答案：小黑。我的邮箱密保也是小黑"
    redacted, _ = redact_secrets(text)
    assert "小黑" not in redacted
    assert redacted.startswith("银行卡安全问题的答案：[")  # the exact rule's cut, the words before it stay
