"""Passwords of Han characters (tianma.guardrails.secret_han)."""

from __future__ import annotations

import pytest

from tianma.guardrails.secrets import find_secrets, redact_secrets


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("我的wifi密码是天王盖地虎", "天王盖地虎"),
        ("家里wifi密码：宝塔镇河妖，记一下", "宝塔镇河妖"),
        ("门锁密码是六个八，别告诉别人", "六个八"),
        ("我邮箱的密码其实是一句歌词：两只老虎跑得快，没有数字", "两只老虎跑得快"),
        ("wifi密码现在是好好学习天天向上", "好好学习天天向上"),
        ("我们的暗号是“山高水长”，见面就说", "山高水长"),
        ("帮我记住，保险箱密码改成了春眠不觉晓", "春眠不觉晓"),
    ],
)
def test_a_password_of_han_characters_is_removed(text: str, value: str) -> None:
    redacted, found = redact_secrets(text)
    assert value not in redacted
    assert found


def test_a_han_password_whose_digits_an_exact_rule_took_goes_whole() -> None:
    redacted, _ = redact_secrets("我的wifi密码改成了小明1998，记一下")
    assert "小明" not in redacted and "1998" not in redacted
    assert redacted.endswith("，记一下")


@pytest.mark.parametrize(
    "text",
    [
        "密码是对的但就是登不上",
        "我的密码是六位数字",
        "我的密码是我生日",
        "我的wifi密码是什么来着",
        "我的密码是公司统一发的",
        "我的密码要区分大小写",
        "我的密码是不是太简单了",
        "成功的密码是坚持",
        "达芬奇密码是一本好书",
        "我的暗号是天王盖地虎吗？",
        "我的密码是在设置里改的",
        "我家wifi密码跟邮箱密码一样",
        "wifi密码 贴在冰箱上",
        "我的密码 写在本子上了",
        "支付密码 输错三次了",
        "我家wifi密码 问我老公",
        "wifi密码：见路由器背面标签",
        "我家wifi密码是路由器背面那串",
    ],
)
def test_talk_about_a_password_loses_no_word(text: str) -> None:
    assert find_secrets(text) == []
