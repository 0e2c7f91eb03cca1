"""The marks that stand in a stored text where personal data or a secret was removed.

Text-level constants: the guardrails write them, and the policies and the memory recognise
them (a statement holding a mark is not learnt as the user's wish), without importing the
guardrails.
"""

from __future__ import annotations

PII_PLACEHOLDERS: dict[str, str] = {
    "phone": "[手机号/phone]",
    "id_card": "[身份证号/ID number]",
    "bank_card": "[银行卡号/bank card]",
    "email": "[邮箱/email]",
    "address": "[地址/address]",
}
"""The typed, bilingual placeholder that replaces each kind of match."""

SECRET_PLACEHOLDERS: dict[str, str] = {
    "private_key": "[私钥已删除/private key removed]",
    "token": "[令牌已删除/token removed]",
    "api_key": "[密钥已删除/key removed]",
    "security_answer": "[密保答案已删除/security answer removed]",
    "cvv": "[安全码已删除/CVV removed]",
    "pin": "[PIN已删除/PIN removed]",
    "otp": "[验证码已删除/code removed]",
    "password": "[密码已删除/password removed]",
    "access_code": "[密码已删除/code removed]",
    "seed_phrase": "[助记词已删除/recovery phrase removed]",
    "card_number": "[卡号已删除/card number removed]",
}
"""The typed, bilingual placeholder that replaces each kind of secret value."""
