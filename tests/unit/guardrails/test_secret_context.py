"""Credential-shaped tokens near a secret's name (tianma.guardrails.secret_context), alone and
as the last pass of find_secrets. Phrasings written for this test, apart from every corpus."""

from __future__ import annotations

import pytest

from tianma.guardrails.secret_context import WINDOW, near_a_name
from tianma.guardrails.secrets import redact_secrets


def _values(text: str) -> list[str]:
    return [text[a:b] for _, (a, b) in near_a_name(text)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5093 — that's the shed code, don't tell the neighbours", "5093"),
        ("Grandpa's laptop: he uses Pepper1961 for the password", "Pepper1961"),
        ("wifi password? it's on the fridge. ok found it: lemonTree88", "lemonTree88"),
        ("地下室那个储物柜，上回我改了，现在 6620，别跟别人说", "6620"),
        ("我妈的邮箱 我帮她设的 qiuju1958 就是密码", "qiuju1958"),
        ("the gate keypad: type in 4471 then press the bell", "4471"),
    ],
)
def test_a_token_near_a_secrets_name_is_removed_wherever_it_stands(text: str, value: str) -> None:
    assert value in _values(text)
    assert value not in redact_secrets(text)[0]


@pytest.mark.parametrize(
    "text",
    [
        "my password must be at least 12 characters and expire every 90 days",
        "密码要8位以上，我改了三次都说太简单",
        "12306 说我密码太简单，要字母加数字",
        "I use 1Password for every password in the family",
        "password reset link for order 88231 never arrived",
        "why does everyone pick 123456 as a password",
        "the RTX 4090 review said nothing about the BIOS password",
        "if password == 'hunter42': print('weak')",
        "ERROR 1045 (28000): Access denied (using password: YES)",
        "my flight 4471 leaves at 10:45, remind me to change the wifi password before",
        "the 10-person team shares one password manager vault",
        "密码忘了，验证码收不到，客服电话 95588 打不通",
        "we moved in 2019 and the door code never changed",
        "my wifi is slow, router model AX3000, what should I change?",
        "路由器是小米AX3000，wifi老断",
    ],
)
def test_talk_about_secrets_keeps_its_numbers(text: str) -> None:
    assert _values(text) == []


def test_only_tokens_within_the_window_of_a_name_are_taken() -> None:
    far = "x " * WINDOW
    text = f"the door code is on the card. {far} Unit B7 shipped 4410 boxes"
    assert _values(text) == []
    near = "the door code? we changed it: 4410"
    assert _values(near) == ["4410"]


def test_a_placeholder_names_no_secret() -> None:
    # a value removed before must not make the rest of the message a secret's neighbourhood
    assert near_a_name("[密码已删除/password removed] was it, and the parcel is 20417 grams") == []
    assert near_a_name("[密码已删除/password removed] and Room 4418 is ours") == []


def test_a_routers_model_is_not_its_password_but_a_value_after_password_is() -> None:
    assert redact_secrets("the wifi router RT-AX86U keeps dropping")[0] == "the wifi router RT-AX86U keeps dropping"
    assert "QX88271" not in redact_secrets("router admin password? it's on the sticker: QX88271")[0]
