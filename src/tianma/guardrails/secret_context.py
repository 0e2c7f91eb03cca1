"""Secrets known only by the message around them: a credential-shaped token anywhere near a
secret's name, before it or after it, in another sentence, with no lead-in the exact rules read
(“7734 — that's the garage code”, “the wifi password? Biscuit2019. 写下来了吗”). A pass for
:mod:`tianma.guardrails.secrets`, which runs it after every other rule, on what they left.

| kind | matches | guard against false positives |
|---|---|---|
| password | within :data:`WINDOW` characters of a secret's name (:data:`NAME`: 密码/口令/验证码/密钥/门禁/锁/指纹/账号/登录/路由器/输入…, password/passcode/PIN/API key/lock/lockbox/keypad/gate/panel/Wi-Fi/log in/account, “door code”, “code:” …), a token of letters with at least one digit (``Rusty1948``, ``zxcv8899``) | a unit or ordinal (``500mg``, ``21st``, ``10am``), a hyphenated count (``10-person``), a version or file name, a URL, an e-mail, 1Password, ``NAME_16``, a network (``Home_5G``); a user, network, commit or meeting named just before; the whole message when it is code or quotes an error (``==``, ``import``, ``Traceback``, 报错) |
| access_code | the same, 4–10 digits (``#4417``, ``4829 1736``, a combination ``41-09-73``, ``5#8#0``) | a count, duration, price or date after it (``8位``, ``10 minutes``, ``30元``, ``2400 followers``), a house number (``1204 Elm St``), a port; an order, flight, zip, error, phone, room, balance or card-ending number, a time (“at 0730”) or a model's capitals (``RTX 4090``) before it; one group of a longer number; a run of one digit or in sequence (``123456``: talk about weak passwords) |
| — | a name right after zip/promo/coupon/error … (“zip code”) names no secret | |

Rules learnt from one author's misses do not carry to the next author's phrasings (the secrets
README, measured on four corpora); this pass trades that for a window: in a message that names a
secret, a token that looks like one is removed wherever it stands.
"""

from __future__ import annotations

import bisect
import re

from tianma.guardrails.secret_shapes import MEASURE, MODEL, NOT_CODE_BEFORE
from tianma.text.placeholders import PII_PLACEHOLDERS, SECRET_PLACEHOLDERS

Span = tuple[int, int]

WINDOW = 160
"""Characters either side of a secret's name in which a credential-shaped token is removed."""

# fmt: off
NAME = re.compile(
    r"密码(?!学)|密碼|口令|密钥|秘钥|验证码|动态码|校验码|门禁|门锁|密码锁|解锁码|开锁|锁屏|储物柜|保险柜|保险箱|暗号|备用码|恢复码|"
    r"助记词|安全码|提取码|取件码|撤防|将军令|令牌|[Pp][Ii][Nn]码|密吗|智能锁|指纹锁|锁|U盾|解开|取款|支付|账号|帐号|登录|登陆|"
    r"[Ww][Ii]-?[Ff][Ii]|门卡|闸机|输入?|指纹|路由器|手机银行|网银"
    r"|(?<![A-Za-z])(?i:passwords?|passwd|pwd|pw|passcodes?|passphrase|passkey|pins?|api[ _-]?keys?|secret[ _-]?keys?|"
    r"private[ _-]?keys?|access[ _-]?keys?|(?:api|access|auth|bearer|github|slack|bot|refresh)[ _-]?tokens?|cvv|cvc|"
    r"combo|combination|keypad|otp|unlock|lockbox|buzzer|dial|wi-?fi|login|log ?in(?:to)?|sign ?in|account|"
    r"codes?(?=\s*[:：]|\s+(?:is|was|that|for|from|they|it|you|i|we)\b)|fingerprint|router|modem|panel|gate|garage|shed|locker|safe|"
    r"padlock|lock|(?:door|gate|garage|shed|lock|padlock|bike|alarm|access|entry|building|mailbox|locker|"
    r"safe|storage|lockbox|keypad|verification|security|unlock|login|2fa|mfa|backup|recovery|wi-?fi|disarm|one-time|app|"
    r"bank|phone|screen|parking|house|apartment|flat|front|back|side)[ -]codes?)(?![A-Za-z])"
)
"""A secret's name, Chinese or English."""
_W = "A-Za-z0-9_"  # an ASCII word character: Han next to a value is no part of it (“是915338”)
_TOKEN = re.compile(rf"(?<![{_W}@./:=<\[-])(?P<v>[A-Za-z0-9!@#$%^&*_+~?-]{{4,39}}[A-Za-z0-9#$%^&*_+~-])(?![{_W}@/:=>\]-]|\.[{_W}])")
_DIGITS = re.compile(
    rf"(?<![{_W}$¥€£.:/,#\[-])(?<![0-9] )"
    rf"(?P<v>#?[0-9]{{4,10}}#?|[0-9]{{4}}(?: [0-9]{{4}}){{1,2}}|[0-9]{{3}} [0-9]{{3}}|[0-9]{{4}}-[0-9]{{4}}|[0-9]{{1,2}}(?:-[0-9]{{1,2}}){{2,3}}|[0-9](?:[-#][0-9]){{3,5}})"
    rf"(?![{_W}:/%\]-]|[.,][0-9]| [0-9])"  # not one group of a longer number (a meeting id 812 6690 0093)
)
_NOT_A_VALUE = re.compile(
    r"\d+(?:st|nd|rd|th|am|pm|k|m|g|kg|km|mg|ml|gb|mb|tb|p|s|x|h|min|mins|hr|hrs|yr|yrs|d|w|v)"
    r"|[A-Za-z]+(?:-[A-Za-z]+)+|\d+(?:-[A-Za-z]+)+|1password|(?-i:[A-Z]+_[0-9]+)"
    r"|(?:sha|md|aes|rsa|des|crc|utf|ipv|ed)-?[0-9]{1,5}"  # an algorithm or encoding (SHA-256), not a password
    r"|.*(?<![0-9])(?:5g|2\.?4g)(?:hz)?(?![0-9a-z]).*",  # a unit, a hyphenated word, NAME_16, a network (Home_5G)
    re.IGNORECASE,
)
_AFTER_A_NUMBER = re.compile(
    r"\s*(?:元|块|美元|刀|年|月|日|号|人|步|条|张|件|份|本|台|辆|只|米|克|斤|公里|粉丝?|票|说|提示|显示|端口"
    r"|(?:says?|said|told|port)\b)| (?!was\b|is\b|this\b|pass\b)[a-z]{2,}s\b| [A-Z][a-z]+\b"
)
"""A price, date or count (“2400 followers”, “3000步”), a house number (“1204 Elm St”), or the
subject of a verb of saying (“12306 说我密码太简单”: a site, not a code)."""
_OTHER_NAME_BEFORE = re.compile(
    r"(?:型号|电话|热线|客服|分机|房间|房号|住在?|尾号|末四位|后四位|余额|工资|价格|花了|名字|名称|叫做?|网络名|用户名|用户|会议号|邮箱|"
    r"(?<![A-Za-z])(?i:phone|tel|hotline|call|ext|extension|room|unit|apt|suite|ssid|names?|named|called|user(?:name)?|"
    r"id|pid|port|model|commit|sha|hash|meeting|e-?mail|ending(?: in)?|last (?:four|4)(?: digits)?|balance|salary|price|cost|paid|spent|"
    r"budget|at|by|until|till|before|after|from|since))(?:\s*(?:是|为|is|:|：|=))?[^A-Za-z0-9]{0,2}$"
)
"""A phone, room, user, network, commit, meeting, balance or price named just before, or a time
(“at 0730”, “from 2019”): not a secret's value."""
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")
_IN_BEFORE = re.compile(r"(?<![A-Za-z])(?i:in|of) $")
"""“in 2019”, “summer of 1998”: a year (not “type in 4471”)."""
_MODEL_BEFORE = re.compile(r"(?<![A-Za-z])(?!PIN|OTP|CVV|CVC|ATM|PWD?)[A-Z]{2,5} ?$")
"""A product's capitals before its number: RTX 4090, GTX 1080 (not PIN 4090)."""
_CODE_OR_ERROR = re.compile(
    r"==|!=|\bimport\b|\bdef\b|\breturn\b|\(\)|;\s*$|(?i:\berror\b|\bexception\b|traceback|failed password|\bsshd\[)|报错|错误码",
    re.MULTILINE,
)
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in {*SECRET_PLACEHOLDERS.values(), *PII_PLACEHOLDERS.values()}))
# fmt: on


def near_a_name(text: str) -> list[tuple[str, Span]]:
    """The credential-shaped tokens within :data:`WINDOW` characters of a secret's name, with
    their kind (``password`` or ``access_code``); none in code or a quoted error."""
    if _CODE_OR_ERROR.search(text):
        return []
    bare = _PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)  # a placeholder's 密码 names nothing
    windows: list[Span] = []  # merged, in order
    for m in NAME.finditer(bare):
        if NOT_CODE_BEFORE.search(bare[max(0, m.start() - 16) : m.start()]):  # a zip code, a promo code
            continue
        if re.match(r"[0-9]|\s+(?i:like|such as)\b", bare[m.end() : m.end() + 9]):
            continue  # part of a token (password1), or examples (“passwords like 123456”)
        lo, hi = max(0, m.start() - WINDOW), m.end() + WINDOW
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], hi)
        else:
            windows.append((lo, hi))
    if not windows:
        return []
    found = [("password", m.span("v")) for m in _TOKEN.finditer(text) if _a_password(text, m)]
    found += [("access_code", m.span("v")) for m in _DIGITS.finditer(text) if _a_code(text, m)]
    starts = [lo for lo, _ in windows]
    inside = [(kind, (a, b)) for kind, (a, b) in found if (i := bisect.bisect_right(starts, a) - 1) >= 0 and b <= windows[i][1]]
    return sorted(inside, key=lambda kind_span: kind_span[1])


def _a_password(text: str, m: re.Match[str]) -> bool:
    value = m.group("v")
    if MODEL.fullmatch(value) and _WEAK_NAMES_ONLY.fullmatch(_names_near(text, m.start())):
        return False  # near a router's or a laptop's name only: its model (AX3000, i7-12700)
    if re.search(r"型号|(?<![A-Za-z])(?i:model)(?![A-Za-z])", text[max(0, m.start() - 12) : m.start()]):
        return False  # 这个型号的保险箱 D-63K: a product's model
    letters = sum(ch.isascii() and ch.isalpha() for ch in value)
    return (
        letters >= 2
        and any(ch.isdigit() for ch in value)
        and not _NOT_A_VALUE.fullmatch(value)
        and not _named_otherwise(text, m.start())
    )


def _a_code(text: str, m: re.Match[str]) -> bool:
    digits = re.sub(r"[-#]", "", m.group("v"))
    trivial = len(set(digits)) == 1 or digits in "01234567890" or digits in "9876543210"
    year = _YEAR.fullmatch(digits) is not None and _IN_BEFORE.search(text, max(0, m.start() - 4), m.start()) is not None
    short_after_phone = len(digits) <= 6 and _PHONE_BEFORE.search(text, max(0, m.start() - 16), m.start()) is not None
    return not (
        trivial
        or year
        or MEASURE.match(text, m.end())
        or _AFTER_A_NUMBER.match(text, m.end())
        or (_named_otherwise(text, m.start()) and not short_after_phone)
    )


_PHONE_BEFORE = re.compile(r"(?:手机上?|(?<![A-Za-z])(?i:(?:my|your|her|his|their)\s+phone))(?:\s*(?:是|为|is|:|：))?[^A-Za-z0-9]{0,2}$")
"""Someone's phone named just before: its number has seven digits or more, so a shorter one is a
code sent to it (“the code it sends now comes to my phone: 774120”); a hotline keeps its five
(客服电话 95588)."""


_WEAK_NAMES_ONLY = re.compile(
    r"(?:(?:wi-?fi|router|modem|路由器|账号|帐号|account|login|log ?in(?:to)?|sign ?in|支付|panel|screen|phone|app)\s*)*",
    re.IGNORECASE,
)
"""Names of things that have a model or a number of their own, not only a secret."""


def _names_near(text: str, at: int) -> str:
    """The secret names within :data:`WINDOW` characters of ``at``, space-joined."""
    return " ".join(m.group() for m in NAME.finditer(text, max(0, at - WINDOW), at + WINDOW))


def _named_otherwise(text: str, start: int) -> bool:
    """An order, flight, zip, promo, error, phone, room, user, network or model number: named as
    something else just before."""
    before = text[max(0, start - 16) : start]
    return any(p.search(before) for p in (NOT_CODE_BEFORE, _OTHER_NAME_BEFORE, _MODEL_BEFORE))
