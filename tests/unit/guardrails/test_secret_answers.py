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


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("农行的验证问题：父亲的名字——王建国；第一所学校——实验小学", ["王建国", "实验小学"]),
        ("for my apple id security questions: dream job - astronaut, first concert - Coldplay", ["astronaut", "Coldplay"]),
        ("Bank login stuff. First pet: Biscuit. Street we grew up on: Elm Row.", ["Biscuit", "Elm Row"]),
        ("注册邮箱那会儿它问最喜欢的歌手，我随便填了个周杰伦，找回密码要用", ["周杰伦"]),
        ("网银问我宠物叫啥 我填的旺财", ["旺财"]),
        ("The bank asked for my favourite teacher and I put Hargreaves, don't let me forget", ["Hargreaves"]),
    ],
)
def test_answers_to_the_usual_questions_of_an_account_are_removed(text: str, values: list[str]) -> None:
    redacted, found = redact_secrets(text)
    for value in values:
        assert value not in redacted
    assert {f.kind for f in found} == {"security_answer"}


@pytest.mark.parametrize(
    "text",
    [
        "My first car was a Corolla and the bank wants a deposit for the next one",
        "第一辆车：捷达，开了十年，现在想换辆新的",  # a topic with an answer, but nothing of an account
        "银行问我最喜欢的颜色是什么，我忘了当时填的红色还是蓝色",  # unsure which
        "Favourite film: Arrival. What should I watch next?",
        "我在银行填的是开户申请表，第一次去",  # filled in a form, no question of an account's recovery
    ],
)
def test_the_usual_topics_said_in_passing_keep_their_words(text: str) -> None:
    assert find_secrets(text) == []
