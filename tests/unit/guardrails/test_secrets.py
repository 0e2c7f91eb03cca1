"""Secret redaction: the corpus of values that must never be stored, the benign near misses, kinds,
idempotence, the bilingual notice, PEM blocks, and living next to PII redaction."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tianma.guardrails import pii
from tianma.guardrails.secrets import (
    NOTICE_EN,
    NOTICE_ZH,
    PLACEHOLDERS,
    SecretMatch,
    find_secrets,
    redact_secrets,
    secret_notice,
)

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "secrets"


def _load(name: str) -> list[dict[str, Any]]:
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


SECRETS = _load("secrets.jsonl")
BENIGN = _load("benign.jsonl")


def _expected(case: dict[str, Any]) -> str:
    """The case's text with each value replaced by its kind's placeholder (values occur once)."""
    out: str = case["text"]
    for value, kind in zip(case["values"], case["kinds"], strict=True):
        out = out.replace(value, PLACEHOLDERS[kind])
    return out


def test_corpus_shape() -> None:
    assert len(SECRETS) >= 45
    assert len(BENIGN) >= 35
    langs = [case["lang"] for case in SECRETS]
    assert langs.count("zh") >= 20 and langs.count("en") >= 20 and langs.count("mixed") >= 3
    ids = [case["id"] for case in SECRETS + BENIGN]
    assert len(ids) == len(set(ids)), "duplicate ids"
    values = [v for case in SECRETS for v in case["values"]]
    assert len(values) == len(set(values)), "duplicate values"
    for case in SECRETS:
        assert case["lang"] in {"zh", "en", "mixed"}, case["id"]
        assert case["values"] and len(case["values"]) == len(case["kinds"]), case["id"]
        for value, kind in zip(case["values"], case["kinds"], strict=True):
            assert kind in PLACEHOLDERS, case["id"]
            assert case["text"].count(value) == 1, f"{case['id']}: {value!r} must occur exactly once"
            short_ok = kind in {"pin", "cvv"} and value.isdigit()
            assert len(value) >= 6 or short_ok, f"{case['id']}: {value!r} is not distinctive"
    for case in BENIGN:
        assert case["lang"] in {"zh", "en", "mixed"} and case["text"], case["id"]
    assert {k for case in SECRETS for k in case["kinds"]} == set(PLACEHOLDERS), "every kind has a case"
    assert any(len(case["values"]) >= 2 for case in SECRETS), "two secrets in one message"
    texts = "\n".join(case["text"] for case in SECRETS)
    for marker in (
        "sk-proj-",
        "ghp_",
        "github_pat_",
        "AKIA",
        "eyJ",
        "Bearer ",
        "OPENSSH PRIVATE KEY",
        "记住",
    ):
        assert marker in texts, marker
    assert any("\n" in v and "PRIVATE KEY" in v for v in values), "a multi-line PEM block"


@pytest.mark.parametrize("case", SECRETS, ids=lambda case: case["id"])
def test_every_secret_value_is_removed(case: dict[str, Any]) -> None:
    redacted, matches = redact_secrets(case["text"])
    leaked = [v for v in case["values"] if v in redacted]
    assert not leaked, f"values kept: {leaked} in {redacted!r}"
    for kind in case["kinds"]:
        assert PLACEHOLDERS[kind] in redacted, f"no {kind} placeholder in {redacted!r}"
    # Exactly the value goes: the words around it stay, and the kind is the expected one.
    assert [(m.kind, m.text) for m in matches] == list(zip(case["kinds"], case["values"], strict=True))
    assert redacted == _expected(case)


@pytest.mark.parametrize("case", BENIGN, ids=lambda case: case["id"])
def test_benign_text_is_untouched(case: dict[str, Any]) -> None:
    assert find_secrets(case["text"]) == []
    assert redact_secrets(case["text"]) == (case["text"], [])


@pytest.mark.parametrize("case", SECRETS + BENIGN, ids=lambda case: case["id"])
def test_redaction_is_idempotent(case: dict[str, Any]) -> None:
    once, _ = redact_secrets(case["text"])
    assert redact_secrets(once) == (once, [])


@pytest.mark.parametrize("placeholder", sorted({*PLACEHOLDERS.values(), *pii.PLACEHOLDERS.values()}))
def test_placeholders_never_match(placeholder: str) -> None:
    for text in (
        f"我的wifi密码是{placeholder}",
        f"密码：{placeholder}，PIN 码 {placeholder}",
        f"my password is {placeholder}.",
        f"api key: {placeholder} token: {placeholder}",
        f"the answer to my security question is {placeholder}",
        placeholder,
    ):
        assert find_secrets(text) == [], text


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("我家的wifi密码就是 88886666", "password", "88886666"),
        ("把银行卡密码改成了 302918", "password", "302918"),
        ('WiFi密码是"sunny2024home"', "password", "sunny2024home"),
        ("passphrase: correct-horse-7-battery", "password", "correct-horse-7-battery"),
        ('"password": "s3cr3t-Pa55"', "password", "s3cr3t-Pa55"),
        ("pin code 4821", "pin", "4821"),
        ("set my PIN to 2841", "pin", "2841"),
        ("动态密码 571930", "otp", "571930"),
        ("verification code: 482 913", "otp", "482 913"),
        ("482913是您的登录验证码", "otp", "482913"),
        ("my CVV is 517", "cvv", "517"),
        ("密保问题答案是 北京市第八中学", "security_answer", "北京市第八中学"),
        ("the answer to my security question (first pet) is Biscuit.", "security_answer", "Biscuit"),
        ("my security question asks for the street I grew up on, answer is Larchmont", "security_answer", "Larchmont"),
        ("Security question: childhood best friend. The answer is Okonkwo.", "security_answer", "Okonkwo"),
        ("the 3 digits on the back of my debit card: 552", "cvv", "552"),
        ("Four numbers on the back of the card are 1234", "cvv", "1234"),
        (
            "export OPENAI_API_KEY=sk-Qz8Lm3Xv7Rk2Wp9Tn4Yb6Hc1Jd5Fg0As",
            "api_key",
            "sk-Qz8Lm3Xv7Rk2Wp9Tn4Yb6Hc1Jd5Fg0As",
        ),
        ("password: sk-Qz8Lm3Xv7Rk2Wp9Tn4Yb6Hc1Jd5Fg0As", "api_key", "sk-Qz8Lm3Xv7Rk2Wp9Tn4Yb6Hc1Jd5Fg0As"),
        ("client_secret: 7f3a9c2e1b8d4f6a0c5e", "api_key", "7f3a9c2e1b8d4f6a0c5e"),
        ("Authorization: Basic dXNlcjpQYXNzdzByZDEyMw==", "token", "dXNlcjpQYXNzdzByZDEyMw=="),
        (
            "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
            "token",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        ),
        (
            "私钥是 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
            "private_key",
            "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
        ),
        # full-width and Chinese digits are read as digits; the value is returned as written
        ("老婆的手机解锁码 ５８２０４６，她让我导照片", "access_code", "５８２０４６"),
        ("保险箱密码变了，现在是七三九一五八", "access_code", "七三九一五八"),
        ("my debit card PIN is four nine one six, don't judge me", "access_code", "four nine one six"),
        ("到我家楼下先按 0528 再按#号，门就开了", "access_code", "0528"),
        ("her password's gone but the code it sends now comes to my phone: 774120", "access_code", "774120"),
    ],
)
def test_kind_of_representative_cases(text: str, kind: str, value: str) -> None:
    matches = find_secrets(text)
    assert [(m.kind, m.text) for m in matches] == [(kind, value)]
    assert text[matches[0].start : matches[0].end] == value


def test_the_code_after_a_pasted_card_number_and_expiry_is_its_cvv() -> None:
    found = find_secrets("visa 4024 0071 5839 2216, 09/29, 348, billing zip 60614")
    assert [(m.kind, m.text) for m in found] == [("card_number", "4024 0071 5839 2216"), ("cvv", "348")]


def test_value_stops_at_han_and_punctuation() -> None:
    assert redact_secrets("密码是abc123xyz，记住")[0] == "密码是[密码已删除/password removed]，记住"
    assert redact_secrets("密码是abc123xyz记住了吗")[0] == "密码是[密码已删除/password removed]记住了吗"
    assert (
        redact_secrets("the password is Tq8vz3Nx, ok?")[0]
        == "the password is [密码已删除/password removed], ok?"
    )


@pytest.mark.parametrize(
    "text",
    [
        'if password == "":',
        "password = getpass.getpass()",
        "password = request.form['password']",
        "SELECT id FROM users WHERE password = :password",
        "password: ********",
        "api_key: ${OPENAI_API_KEY}",
        "max_tokens: 4096",
        "my password is protected by 2FA",
        "验证码发到 13812345678 了",
        "PIN 码 3 次输错会锁卡",
        "I forgot the answer to my security question",
        "the security question was about my first school, the answer escapes me",
        "there are three numbers on the back of the card, what are they for?",
        # a product's model, a flight's gate, a public address, a variable, examples, log lines
        "For the quiz: 'What is the largest planet?' The answer is Jupiter, right?",
        "the answer for 'largest planet' is Jupiter",
        "这个型号的保险箱 D-63K，出厂默认密码怎么改？",
        "Flight UA 837 departs SFO at 11:05, gate G98. remind me 3 hours before",
        "my ETH receiving address is 0x3F9a2C7e81D44b6a9E05c72d1B8f4A63b2C1d0E9, friends can send to that right?",
        "docker-compose 里 DB_PASSWORD=${DB_PASSWORD} 这种写法是从环境变量里读取吧？",
        "why do sites block passwords like 123456 or password1? curious",
        "auth.log: sshd[2291]: Failed password for invalid user oracle from 198.51.100.23 port 51422 ssh2",
        "服务器日志：login failed for user=admin ip=10.0.0.5 reason=bad_password attempts=3",
    ],
)
def test_code_and_talk_about_secrets_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_matches_are_ordered_and_do_not_overlap() -> None:
    text = "邮箱密码是 Lp3vz8Qk，验证码 482913，key sk-Qz8Lm3Xv7Rk2Wp9Tn4Yb6Hc1Jd5Fg0As，CVV 291"
    matches = find_secrets(text)
    assert [m.kind for m in matches] == ["password", "otp", "api_key", "cvv"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(matches))
    assert all(text[m.start : m.end] == m.text for m in matches)


def test_secret_match_is_a_frozen_slotted_value() -> None:
    match = find_secrets("验证码 482913")[0]
    assert match == SecretMatch("otp", 4, 10, "482913")
    with pytest.raises(dataclasses.FrozenInstanceError):
        match.kind = "pin"  # type: ignore[misc]
    assert not hasattr(match, "__dict__")


PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEAx9Tq2Zr9WmLs8Xd2Gh6Jk0Ln3Pq5Rs7Tu9Vw1Xy3Za5Bc7De9\n"
    "Fg1Hi3Jk5Lm7No9Pq1Rs3Tu5Vw7Yb6Hc1Jd5Fg0As8DkEmPq2RzQw7eRt9YuI2oP\n"
    "4aS6dF8gH0jK3lZ5xC1vBnMkJhGf==\n"
    "-----END RSA PRIVATE KEY-----"
)


def test_pem_block_spanning_lines_is_removed_whole() -> None:
    text = f"帮我记住这个：\n{PEM}\n是测试服务器的"
    redacted, matches = redact_secrets(text)
    assert redacted == f"帮我记住这个：\n{PLACEHOLDERS['private_key']}\n是测试服务器的"
    assert [(m.kind, m.text) for m in matches] == [("private_key", PEM)]
    for line in PEM.splitlines():
        assert line not in redacted


def test_pem_block_cut_short_is_removed_to_its_last_line() -> None:
    cut = "\n".join(PEM.splitlines()[:3])
    redacted, _ = redact_secrets(f"I pasted only this:\n{cut}\nwhat now?")
    assert redacted == f"I pasted only this:\n{PLACEHOLDERS['private_key']}\nwhat now?"


def test_two_pem_blocks_stay_two() -> None:
    text = f"{PEM}\nand the old one\n{PEM.replace('MIIE', 'MIIF')}"
    redacted, matches = redact_secrets(text)
    assert [m.kind for m in matches] == ["private_key", "private_key"]
    assert redacted == f"{PLACEHOLDERS['private_key']}\nand the old one\n{PLACEHOLDERS['private_key']}"


@pytest.mark.parametrize(
    ("text", "notice"),
    [
        ("我的wifi密码是Xk92mq!7", NOTICE_ZH),
        ("记住 my password is Yq3#vn8Kt", NOTICE_ZH),
        ("my password is hunter2Zq", NOTICE_EN),
        ("OTP 839152", NOTICE_EN),
    ],
)
def test_notice_speaks_the_users_language(text: str, notice: str) -> None:
    assert secret_notice(text) == notice


def test_notice_says_what_and_where() -> None:
    assert NOTICE_ZH != NOTICE_EN
    for word in ("密码", "验证码", "密钥", "删", "密码管理器", "钥匙串"):
        assert word in NOTICE_ZH, word
    for word in ("passwords", "codes", "keys", "removed", "password manager", "keychain"):
        assert word in NOTICE_EN, word
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in NOTICE_EN)


MIXED_PII = (
    "手机13812345678，邮箱 me@example.com，住北京市朝阳区建国路88号；"
    "wifi密码是Xk92mq!7，验证码 482913，key sk-Qz8Lm3Xv7Rk2Wp9Tn4Yb6Hc1Jd5Fg0As"
)
PII_VALUES = ("13812345678", "me@example.com", "北京市朝阳区建国路88号")
SECRET_VALUES = ("Xk92mq!7", "482913", "sk-Qz8Lm3Xv7Rk2Wp9Tn4Yb6Hc1Jd5Fg0As")


def _pii_then_secrets(text: str) -> str:
    return redact_secrets(pii.redact(text)[0])[0]


def _secrets_then_pii(text: str) -> str:
    return pii.redact(redact_secrets(text)[0])[0]


@pytest.mark.parametrize("pipeline", [_pii_then_secrets, _secrets_then_pii])
def test_pii_and_secret_placeholders_survive_each_other(pipeline: Callable[[str], str]) -> None:
    out = pipeline(MIXED_PII)
    assert not [v for v in (*PII_VALUES, *SECRET_VALUES) if v in out], out
    for kind in ("phone", "email", "address"):
        assert pii.PLACEHOLDERS[kind] in out, kind
    for kind in ("password", "otp", "api_key"):
        assert PLACEHOLDERS[kind] in out, kind
    # Both stages are idempotent on the other's output: running them again changes nothing.
    assert pii.redact(out)[0] == out
    assert redact_secrets(out)[0] == out


def test_a_value_both_modules_claim_keeps_the_first_placeholder() -> None:
    text = "银行卡密码是13812345678"  # a password that looks like a phone number
    assert _secrets_then_pii(text) == f"银行卡密码是{PLACEHOLDERS['password']}"
    assert _pii_then_secrets(text) == f"银行卡密码是{pii.PLACEHOLDERS['phone']}"


@pytest.mark.parametrize("case", SECRETS, ids=lambda case: case["id"])
def test_pii_redaction_leaves_corpus_placeholders_intact(case: dict[str, Any]) -> None:
    redacted = redact_secrets(case["text"])[0]
    assert pii.redact(redacted)[0] == redacted
    out = _pii_then_secrets(case["text"])
    assert not [v for v in case["values"] if v in out], out


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("my password is correct horse battery staple", "correct horse battery staple"),
        ("the wifi password: purple monkey dishwasher", "purple monkey dishwasher"),
        ('my password is "correct horse battery staple"', "correct horse battery staple"),
        ("my Netflix password is Blue Whale Sunset, please remember", "Blue Whale Sunset"),
    ],
)
def test_a_password_of_several_words_is_removed(text: str, value: str) -> None:
    redacted, found = redact_secrets(text)
    assert value not in redacted
    assert [f.kind for f in found] == ["password"]


@pytest.mark.parametrize(
    "text",
    [
        "My password is the same as before",
        "my password is too weak for the bank",
        "my password is correct but it still fails",
        "my password is my dog's name",
        "my password is not working anymore",
        "my password is something only I know",
        "my password is case sensitive right",
        "my password is pretty strong I think",
        "the password is hard to remember",
    ],
)
def test_words_about_a_password_are_not_one(text: str) -> None:
    assert find_secrets(text) == []
