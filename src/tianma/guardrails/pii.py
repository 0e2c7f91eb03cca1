"""PII detection and redaction, run before a message or a memory is stored.

| kind | matches | guard against false positives |
|---|---|---|
| email | ``local@domain.tld`` | — |
| id_card | 18-digit PRC resident ID (17 digits + digit/X), optionally grouped 6-8-4 | ISO 7064 MOD 11-2 checksum and a real birth date; 15-digit legacy IDs only right after 身份证 |
| bank_card | 16–19 digits, contiguous or grouped in 4s by spaces/dashes | Luhn check; an 18-digit number that is a valid ID is an id_card |
| phone | CN mobile ``1[3-9]`` + 9 digits (spaces/dashes, +86), landlines ``010-12345678``, ``+<cc>`` numbers of 8–15 digits, ``(555) 123-4567`` | never a slice of a longer digit run |
| address | zh: road/street + number + 号, or community + number + 栋/单元/室…; en: number + capitalised name + street suffix | a city alone (我住在北京) is a useful fact, not PII |

Dates, prices, times and order numbers of ordinary length match none of these. When spans overlap,
the kind higher in the table wins. The user may ask to keep a detail ("记住我的手机号…",
"remember my email…"); ``redact_unless_asked`` then stores the text as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from tianma.text.placeholders import PII_PLACEHOLDERS

PLACEHOLDERS = PII_PLACEHOLDERS
"""The typed, bilingual placeholder that replaces each kind of match (:mod:`tianma.text.placeholders`)."""


@dataclass(frozen=True, slots=True)
class PiiMatch:
    """One piece of personal data found in a text."""

    kind: str
    """``phone``, ``id_card``, ``bank_card``, ``email`` or ``address``."""
    start: int
    """Offset of the first character in the original text."""
    end: int
    """Offset one past the last character."""
    text: str
    """The matched characters, as written."""


# fmt: off
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])")
_ID18 = re.compile(r"(?<![\dA-Za-z])\d{6}[ -]?\d{8}[ -]?\d{3}[\dXx](?![\dA-Za-z])")
_ID15 = re.compile(r"身份证(?:号码|号)?\s*(?:是|为|:|：)?\s*(\d{15})(?!\d)")
_BANK = re.compile(r"(?<!\d)(?<!\d[ -])(?:\d{16,19}|\d{4}(?:[ -]\d{4}){3}(?:[ -]?\d{1,3})?)(?!\d)(?![ -]\d)")
_PHONES = (
    re.compile(r"(?<![\d+])(?:(?:\+|00)?86[ -]?)?1[3-9]\d(?:[ -]?\d{4}){2}(?!\d)"),      # CN mobile
    re.compile(r"(?<![\d+])(?:\(0\d{2,3}\) ?|0\d{2,3}[ -])\d{7,8}(?:-\d{1,4})?(?!\d)"),  # CN landline
    re.compile(r"(?<![A-Za-z0-9+])\+\d{1,3}(?:[ -]?(?:\(\d{1,4}\)|\d{1,4})){2,7}(?!\d)"),  # international
    re.compile(r"(?<![\d+])(?:\(\d{3}\) ?|\d{3}-)\d{3}-\d{4}(?!\d)"),                   # North American
)
# Han characters that may form a place name; lead-ins such as 我住在 / 寄到 / 位于 / 逛 stop it.
_NAME = r"(?:(?![在是到住我你他她的给寄送发址了从去往于逛])[\u4e00-\u9fff])"
_NUM = r"\d+(?:-\d+)?"
_UNIT = r"(?:号楼|号院|栋|幢|座|单元|层|楼|室|号|户)"
_ZH_ADDRESS = re.compile(
    rf"(?:{_NAME}{{1,16}}(?:路|街|大道|大街|巷|胡同)(?:{_NUM}弄)?\s*{_NUM}\s*号"
    rf"|{_NAME}{{1,16}}(?:小区|花园|公寓|新村|家园|苑|大厦|社区|村|园)\s*{_NUM}\s*(?:号楼|栋|幢|座|单元|室))"
    rf"(?:\s*{_NUM}\s*{_UNIT})*"
)
_EN_SUFFIX = (
    r"street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|way|court|ct|place|pl|"
    r"terrace|parkway|pkwy|highway|hwy|circle|square|sq"
)
_EN_ADDRESS = re.compile(
    r"(?<![A-Za-z0-9])\d{1,6}[A-Za-z]?\s+(?:(?:[A-Z][A-Za-z'-]*|\d+(?:st|nd|rd|th))\s+){1,4}?"
    rf"(?i:{_EN_SUFFIX})(?![A-Za-z])(?:\.(?=,))?(?:\s+(?:N|S|E|W|NE|NW|SE|SW)(?![A-Za-z]))?"
    r"(?:,?\s*(?:Apt|Apartment|Suite|Ste|Unit|Room|Rm|Flat)\.?\s*#?\s*[A-Za-z0-9-]+|,?\s*#\s*\d+[A-Za-z]?)?"
    r"(?:,\s*[A-Z][A-Za-z]+(?:\s+[A-Z][A-Za-z]+)*(?:,\s*[A-Z]{2}(?:\s+\d{5}(?:-\d{4})?)?)?)?"
)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"

_ZH_ASK = re.compile(r"记住|记一下|记下|帮我记|记好|记着|保存|存一下|存下|存起来")
_ZH_OBJECT = re.compile(r"我的?(?:手机|电话|号码|邮箱|邮件地址|地址|住址|身份证|卡号|银行卡)")
_ZH_NEGATED = re.compile(r"(?:别|不要|不用|不必|无需|勿|不许|不准|没必要)\s*(?:再)?\s*(?:帮我)?\s*(?:记|保存|存)")
_EN_ASK = re.compile(
    r"\b(?:remember|memori[sz]e|save|store|keep|note down|write down|jot down)\s+(?:that\s+|this:?\s+)?(?:my|this|it)\b"
    r"|\bkeep\s+my\b.{0,40}\bon file\b",
    re.IGNORECASE,
)
_EN_OBJECT = re.compile(
    r"\bmy\s+(?:(?:home|mailing|email|e-mail|street)\s+)?(?:phone|mobile|cell|number|email|e-mail|address|card|id|passport)",
    re.IGNORECASE,
)
_EN_NEGATED = re.compile(
    r"\b(?:don[’']?t|do not|never|no need to|stop|shouldn[’']?t|should not|can[’']?t|cannot|won[’']?t)\s+"
    r"(?:\w+\s+){0,3}?(?:remember|memori[sz]e|save|store|keep|note|write|jot)\b",
    re.IGNORECASE,
)
# fmt: on


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdecimal() or ch in "Xx").upper()


def _is_birth_date(yyyymmdd: str) -> bool:
    try:
        born = date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:8]))
    except ValueError:
        return False
    return date(1900, 1, 1) <= born <= date(2100, 1, 1)


def is_valid_id_number(digits: str) -> bool:
    """Whether 18 characters form a PRC resident ID: region, birth date and MOD 11-2 check digit."""
    if len(digits) != 18 or not digits[:17].isdigit() or digits[0] not in "12345678":
        return False
    if not _is_birth_date(digits[6:14]):
        return False
    total = sum(int(d) * w for d, w in zip(digits[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == digits[17].upper()


def passes_luhn(digits: str) -> bool:
    """The Luhn (mod 10) check used by payment card numbers."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _candidates(text: str) -> list[PiiMatch]:
    """Every candidate span, kinds in priority order (email first, address last)."""
    found = [PiiMatch("email", m.start(), m.end(), m.group()) for m in _EMAIL.finditer(text)]
    found += [
        PiiMatch("id_card", m.start(), m.end(), m.group())
        for m in _ID18.finditer(text)
        if is_valid_id_number(_digits(m.group()))
    ]
    for m in _ID15.finditer(text):
        if _is_birth_date("19" + m.group(1)[6:12]):
            found.append(PiiMatch("id_card", m.start(1), m.end(1), m.group(1)))
    for m in _BANK.finditer(text):
        digits = _digits(m.group())
        if 16 <= len(digits) <= 19 and passes_luhn(digits):
            kind = "id_card" if is_valid_id_number(digits) else "bank_card"
            found.append(PiiMatch(kind, m.start(), m.end(), m.group()))
    for rx in _PHONES:
        found += [
            PiiMatch("phone", m.start(), m.end(), m.group())
            for m in rx.finditer(text)
            if 8 <= len(_digits(m.group())) <= 15
        ]
    for rx in (_ZH_ADDRESS, _EN_ADDRESS):
        found += [PiiMatch("address", m.start(), m.end(), m.group().rstrip()) for m in rx.finditer(text)]
    return found


def find_pii(text: str) -> list[PiiMatch]:
    """Find personal data in a text.

    Args:
        text: a user message or a memory, Chinese or English.

    Returns:
        Non-overlapping matches in text order; on overlap the higher-priority kind wins.
    """
    taken: list[PiiMatch] = []
    for cand in _candidates(text):
        if all(cand.end <= t.start or cand.start >= t.end for t in taken):
            taken.append(cand)
    return sorted(taken, key=lambda m: m.start)


def redact(text: str) -> tuple[str, list[PiiMatch]]:
    """Replace each piece of personal data with its typed placeholder.

    Args:
        text: the text to clean.

    Returns:
        The redacted text and the matches that were replaced (offsets refer to the original text).
    """
    matches = find_pii(text)
    return replace_spans(text, [(m.start, m.end, PLACEHOLDERS[m.kind]) for m in matches]), matches


def replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each non-overlapping ``(start, end)`` span, in order, replaced by its string."""
    out = text
    for start, end, placeholder in reversed(spans):
        out = out[:start] + placeholder + out[end:]
    return out


def asks_to_remember(text: str) -> bool:
    """Whether the user explicitly asks to keep a personal detail.

    Args:
        text: the user's message.

    Returns:
        True for 记住我的手机号… / remember my email… (or a 记住/save request next to PII);
        False when the request is negated (别记住… / don't remember…).
    """
    if _ZH_NEGATED.search(text) or _EN_NEGATED.search(text):
        return False
    if _ZH_ASK.search(text) and (_ZH_OBJECT.search(text) or find_pii(text)):
        return True
    return bool(_EN_ASK.search(text) and (_EN_OBJECT.search(text) or find_pii(text)))


def redact_unless_asked(text: str) -> tuple[str, list[PiiMatch]]:
    """``redact(text)``, unless the user asked to keep the detail; then ``(text, [])``.

    Args:
        text: the user's message.

    Returns:
        The text to store and the matches that were replaced.
    """
    if asks_to_remember(text):
        return text, []
    return redact(text)


def scrub(text: str, enabled: bool = True) -> tuple[str, list[PiiMatch]]:
    """What tianma stores of a user's text: redacted unless the user asked to keep it (or
    redaction is off)."""
    return redact_unless_asked(text) if enabled else (text, [])
