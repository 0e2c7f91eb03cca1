"""PII detection and redaction: each kind, near misses, placeholders, explicit requests to remember."""

from __future__ import annotations

import itertools

import pytest

from tianma.guardrails.pii import (
    PLACEHOLDERS,
    asks_to_remember,
    find_pii,
    is_valid_id_number,
    passes_luhn,
    redact,
    redact_unless_asked,
)

VALID_ID = "110101199003074514"
VALID_ID_X = "44030519851201004X"
ID_PASSING_LUHN = "320102197811150104"
VISA_TEST = "4111111111111111"
UNIONPAY_19 = "6222021234567890128"


@pytest.mark.parametrize(
    ("text", "kind", "found"),
    [
        ("我的手机号是13812345678", "phone", "13812345678"),
        ("打 138-1234-5678 找我", "phone", "138-1234-5678"),
        ("电话 +86 139 1234 5678", "phone", "+86 139 1234 5678"),
        ("座机010-12345678", "phone", "010-12345678"),
        ("分机 0755-87654321 转 8", "phone", "0755-87654321"),
        ("call me at +44 20 7946 0958", "phone", "+44 20 7946 0958"),
        ("my number is (555) 123-4567", "phone", "(555) 123-4567"),
        (f"身份证{VALID_ID}", "id_card", VALID_ID),
        (f"ID number {VALID_ID_X}.", "id_card", VALID_ID_X),
        ("身份证号码是110101900307451", "id_card", "110101900307451"),
        (f"卡号 {UNIONPAY_19}", "bank_card", UNIONPAY_19),
        ("card 4111 1111 1111 1111", "bank_card", "4111 1111 1111 1111"),
        ("card 4111-1111-1111-1111 exp 12/28", "bank_card", "4111-1111-1111-1111"),
        ("邮箱是abc.def@example.com的", "email", "abc.def@example.com"),
        ("email me at john.doe+tag@mail.co.uk", "email", "john.doe+tag@mail.co.uk"),
        ("我住在北京市朝阳区建国路88号", "address", "北京市朝阳区建国路88号"),
        ("上海市浦东新区世纪大道100号3号楼502室", "address", "上海市浦东新区世纪大道100号3号楼502室"),
        ("快递寄到阳光小区3栋2单元501室", "address", "阳光小区3栋2单元501室"),
        ("我家住在杭州市西湖区文三路 478 号", "address", "杭州市西湖区文三路 478 号"),
        ("I live at 221B Baker Street", "address", "221B Baker Street"),
        (
            "1600 Pennsylvania Ave NW, Washington, DC 20500",
            "address",
            "1600 Pennsylvania Ave NW, Washington, DC 20500",
        ),
        ("ship to 12 Main St, Apt 4 please", "address", "12 Main St, Apt 4"),
    ],
)
def test_finds_each_kind(text: str, kind: str, found: str) -> None:
    matches = find_pii(text)
    assert [(m.kind, m.text) for m in matches] == [(kind, found)]
    assert text[matches[0].start : matches[0].end] == found


@pytest.mark.parametrize(
    "text",
    [
        "2026年3月5日花了2000元",
        "明天3点半见，2026-03-05 10:30",
        "订单号 12345",
        "订单号 1234567890",
        "共计 4,000,000 元，跑了 10000 步",
        "version 3.11.4, IP 192.168.1.100",
        "我住在北京",
        "我在上海工作",
        "我们村3号开会",
        "我在3号楼开会",
        "坐1路公交车到5号线",
        "I walked 3 blocks down Main Street",
        "He scored 221 points in 2026",
        "110101199003074515",  # one digit off: the MOD 11-2 check digit fails
        "1234567890123456",  # 16 digits, not Luhn-valid
        "1234 5678 9012 3456",
        "身份证号码是110101901307451",  # legacy ID with month 13
    ],
)
def test_ignores_non_pii(text: str) -> None:
    assert find_pii(text) == []


def test_phone_is_never_a_slice_of_a_longer_digit_run() -> None:
    assert find_pii("流水号 913812345678999") == []
    assert [m.text for m in find_pii("x13812345678")] == [
        "13812345678"
    ]  # a letter is a boundary, a digit is not
    assert find_pii("913812345678") == []


def test_id_checksum_and_luhn_helpers() -> None:
    assert is_valid_id_number(VALID_ID)
    assert is_valid_id_number(VALID_ID_X.lower())
    assert not is_valid_id_number(VALID_ID[:-1] + "5")
    assert not is_valid_id_number("110101199002304514")  # 30 February
    assert passes_luhn(VISA_TEST)
    assert not passes_luhn("4111111111111112")


def test_valid_id_that_also_passes_luhn_is_an_id_card() -> None:
    assert passes_luhn(ID_PASSING_LUHN)
    assert [m.kind for m in find_pii(f"号码 {ID_PASSING_LUHN}")] == ["id_card"]


def test_matches_are_ordered_and_do_not_overlap() -> None:
    text = f"电话13812345678，邮箱 a@b.com，卡 {VISA_TEST}，住建国路88号"
    kinds = [m.kind for m in find_pii(text)]
    assert kinds == ["phone", "email", "bank_card", "address"]
    spans = [(m.start, m.end) for m in find_pii(text)]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_redact_replaces_with_typed_placeholders() -> None:
    text = (
        f"手机13812345678，身份证{VALID_ID}，卡号{VISA_TEST}，邮箱 me@example.com，地址北京市朝阳区建国路88号"
    )
    redacted, matches = redact(text)
    assert redacted == (
        "手机[手机号/phone]，身份证[身份证号/ID number]，卡号[银行卡号/bank card]，"
        "邮箱 [邮箱/email]，地址[地址/address]"
    )
    assert [m.kind for m in matches] == ["phone", "id_card", "bank_card", "email", "address"]


def test_redact_english_and_clean_text() -> None:
    assert redact("Call +1 415-555-0132 or visit 221B Baker Street.")[0] == (
        f"Call {PLACEHOLDERS['phone']} or visit {PLACEHOLDERS['address']}."
    )
    assert redact("我住在北京，喜欢猫") == ("我住在北京，喜欢猫", [])


@pytest.mark.parametrize(
    "text",
    [
        "记住我的手机号13812345678",
        "帮我记一下我家地址：北京市朝阳区建国路88号",
        "记下来：13812345678",
        "记住我的邮箱",
        "remember my email a@b.com",
        "Please remember my phone number is 555-123-4567",
        "save my email: x@y.com",
        "keep my card on file",
        "note down my address: 12 Main St",
    ],
)
def test_asks_to_remember(text: str) -> None:
    assert asks_to_remember(text)


@pytest.mark.parametrize(
    "text",
    [
        "别记住我的手机号13812345678",
        "不要保存我的身份证号",
        "我的手机号是13812345678，别记住",
        "我的手机号是13812345678",
        "记住明天开会",
        "don't remember my address",
        "Do not save my address: 12 Main St",
        "I don't want you to remember my phone",
        "I can't remember my phone number",
        "remember to call mom",
    ],
)
def test_does_not_ask_to_remember(text: str) -> None:
    assert not asks_to_remember(text)


def test_redact_unless_asked() -> None:
    kept = "记住我的手机号13812345678"
    assert redact_unless_asked(kept) == (kept, [])
    text, matches = redact_unless_asked("别记住我的手机号13812345678")
    assert text == "别记住我的手机号[手机号/phone]"
    assert [m.kind for m in matches] == ["phone"]
