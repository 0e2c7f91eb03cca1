"""Secrets in structured text: machine payloads people paste, and lists people type. Patterns and
passes for :mod:`tianma.guardrails.secrets`, which runs them after its other rules.

| kind | matches | guard against false positives |
|---|---|---|
| password | the ``P:`` field of a Wi-Fi QR payload (``WIFI:T:WPA;S:name;P:pass;;``); a query parameter or form field named secret/password/token/api key (``corpsecret=…``, ``&client_secret=…``); ``curl -u user:pass``; an app-specific password ``abcd-efgh-ijkl-mnop`` (four groups of four small letters, at most three vowels); each value on the list lines after a heading naming passwords (“几个常用的密码：”, “passwords for the shop:”) | a network name (``S:``); a parameter whose value is short or a plain word; hyphenated words (“long-term-care-plan” has vowels) |
| access_code | a recovery key of eight groups of six digits (BitLocker) | nothing else has that shape |
| seed_phrase | a numbered list of 12–24 small words (“1. arctic 2. velvet …”) when a wallet, seed or backup is named nearby | a numbered list of other things: no seed word |
| security_answer | the answers of a list after “security questions / 安全提示问题 / 密保问题” (“first pet: Biscuit, city I was born in: Dayton”, “第一辆车 我填的捷达，最喜欢的老师 张老师”); the answer after a quoted question (“for 'what was the name of your first school' I put Lincoln Elementary”) | a clause without a separator between question and answer |
| access_code | a value a named secret was *changed to* later in the sentence (“PIN码…但我之前改成了8096”); a lock's combination (``27-81-46``) in a sentence naming a safe or lock; a further code of the same shape in the sentence of one found (“输成 KXPLNM 了 其实是 KXPLMN”) | a count or duration after the number; no secret named |
"""

from __future__ import annotations

import bisect
import re

from tianma.guardrails.secret_codes import ASCII_START, SP
from tianma.guardrails.secret_shapes import MEASURE

# fmt: off
_SP, _A = SP, ASCII_START
_STOP = "。！？!?\n"

WIFI_QR = re.compile(r"WIFI:(?:[^\n]{0,120}?;)?P:(?P<v>(?:\\.|[^;\\\n]){1,63});", re.IGNORECASE)
QUERY_SECRET = re.compile(
    r"(?:(?<![A-Za-z0-9_])[A-Za-z_]{0,20}(?:secret|passw(?:or)?d|pwd|token|api_?key|apikey|(?:account|access|private|shared)_?key)[A-Za-z_]{0,12}"
    r"|(?<=[?&])(?:key|sig|signature|auth|code))=(?P<v>[^&;\s'\"<>]{6,128})",
    re.IGNORECASE,
)
CURL_USER = re.compile(r"\b(?:curl|wget|http)\b[^\n]{0,200}?\s(?:-u|--user)\s*['\"]?[^\s:'\"]{1,64}:(?P<v>[^\s'\"]{3,128})")
APP_PASSWORD = re.compile(r"(?<![A-Za-z0-9-])(?P<v>(?!(?:[a-z-]{0,18}[aeiou]){4})[a-z]{4}(?:-[a-z]{4}){3})(?![A-Za-z0-9-])")
RECOVERY_KEY = re.compile(r"(?<![0-9-])(?P<v>[0-9]{6}(?:-[0-9]{6}){7})(?![0-9-])")
NUMBERED_WORDS = re.compile(
    r"(?<![A-Za-z0-9])(?P<v>1[.)、]\s*[a-z]{3,8}(?:[\s,;]+(?:[2-9]|1[0-9]|2[0-4])[.)、]\s*[a-z]{3,8}){11,23})(?![A-Za-z])"
)
_PASSWORDS_HEADING = re.compile(
    rf"(?:密码|口令|账号密码|{_A}(?:passwords|passcodes|logins|credentials|codes))[^\n]{{0,40}}[:：]{_SP}*\n",
    re.IGNORECASE,
)
_LIST_LINE = re.compile(rf"^{_SP}*(?:[0-9]{{1,2}}[.)、]|[-*•·]){_SP}*(?P<body>[^\n]+)$")
_LAST_TOKEN = re.compile(r"(?P<v>[^\s:：]+)\s*$")
_QUESTIONS_HEADING = re.compile(
    r"(?<![A-Za-z])security\s+questions?(?![A-Za-z])|安全提示问题|安全问题|密保问题|密码提示问题", re.IGNORECASE
)
_ANSWER_EN = re.compile(r"[:：]\s*(?P<v>[A-Z][A-Za-z.'’-]*(?:\s+[A-Z][A-Za-z'’-]*){0,2})(?![A-Za-z])")
_ANSWER_ZH = re.compile(r"(?:我填的是?|填的是|我设的是?|设的是|答案是|是|[:：]|\s)\s*(?P<v>[\u4e00-\u9fff]{1,6})$")
_ANSWER_VALUE = r"['\"“‘]?(?P<v>[A-Z][A-Za-z'’-]*(?:\s+[A-Z][A-Za-z'’-]*){0,2})"
QUOTED_QUESTION = re.compile(
    r"['\"“‘](?i:what|who|where|which|in what|name of)[^'\"”’\n]{3,80}[?？]?['\"”’]\s*,?\s*"
    r"(?:(?:I|i)\s+(?:put|used|wrote|typed|said|set|answered)\s+"
    r"|(?:the\s+)?answer\s+(?:I|i)\s+(?:used|gave|put|set|chose)\s+(?:is|was)\s+|my\s+answer\s+(?:is|was)\s+)" + _ANSWER_VALUE
)
ANSWER_FOR_QUOTED = re.compile(
    r"(?:(?<![A-Za-z])(?:my|our|his|her|their)\s+|['’]s\s+)answer\s+(?:(?:I|i)\s+(?:used|gave|put|set|chose)\s+)?"
    r"(?:for|to)\s+['\"“‘][^'\"”’\n]{3,80}['\"”’]\s+(?:is|was)\s+" + _ANSWER_VALUE
)
"""An answer given for a quoted security question (this and :data:`QUOTED_QUESTION`), before or
after the question: “'first pet?' I put Biscuit”, “For "What was the make of your first car?" the
answer I used is "Oldsmobile Cutlass"”, “my bank's answer for 'city where your parents met' is
Kalamazoo”. Someone's answer, not “the answer”: a quiz question in quotes holds no secret."""
_NAMED = re.compile(r"密码|口令|PIN|(?<![A-Za-z])(?:password|passcode|pin|code)(?![A-Za-z])", re.IGNORECASE)
CHANGED_TO = re.compile(
    rf"(?:改成|换成|改为|设成|设为|变成|(?<![A-Za-z])(?:changed|switched|set)(?:{_SP}+it)?{_SP}+to(?![A-Za-z]))"
    rf"了?{_SP}*(?P<v>[0-9]{{4,10}}|(?=[A-Za-z0-9@#$%^&*!_.+=-]*[0-9])(?=[A-Za-z0-9@#$%^&*!_.+=-]*[A-Za-z])"
    rf"[A-Za-z0-9@#$%^&*!_.+=-]{{6,64}})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_LOCK = re.compile(r"保险柜|保险箱|密码锁|挂锁|转盘|(?<![A-Za-z])(?:safe|lock|padlock|combination|combo)(?![A-Za-z])", re.IGNORECASE)
COMBINATION = re.compile(r"(?<![0-9-])(?P<v>[0-9]{1,2}-[0-9]{1,2}-[0-9]{1,2})(?![0-9-])")
# fmt: on

Span = tuple[int, int]


def query_secret_check(text: str, m: re.Match[str]) -> Span | None:
    """A query parameter or form field named like a secret whose value is not a plain word."""
    value = m.group("v")
    if (value.isalpha() and value.islower()) or re.fullmatch(r"[<{\[(].*|\$\w+|\$[{(].*|%\w+%", value):
        return None  # a word or a variable
    if re.search(r"[xX*]{3,}|\.{3}|example|placeholder|your|changeme", value, re.IGNORECASE):
        return None  # a placeholder
    return m.start("v"), m.end("v")


def listed_passwords(text: str) -> list[Span]:
    """The value at the end of each list line after a heading that names passwords."""
    spans: list[Span] = []
    for heading in _PASSWORDS_HEADING.finditer(text):
        offset = heading.end()
        for _ in range(20):
            line_end = text.find("\n", offset)
            line = text[offset : len(text) if line_end < 0 else line_end]
            item = _LIST_LINE.match(line[:300])
            if item is None:
                break
            last = _LAST_TOKEN.search(item.group("body"))
            if last is not None and _password_like(last.group("v")) and last.start() > 0:
                start = offset + item.start("body") + last.start("v")
                spans.append((start, start + len(last.group("v"))))
            if line_end < 0:
                break
            offset = line_end + 1
    return spans


def _password_like(value: str) -> bool:
    """Letters with digits or symbols, or four digits or more."""
    if value.isdigit():
        return len(value) >= 4
    return any(c.isalpha() for c in value) and any(c.isdigit() or c in "!@#$%^&*_+=~?-" for c in value)


def listed_answers(text: str) -> list[Span]:
    """The answers on the line after a security-questions heading, one per comma-separated clause."""
    spans: list[Span] = []
    for heading in _QUESTIONS_HEADING.finditer(text):
        line_end = text.find("\n", heading.end(), heading.end() + 300)
        end = min(len(text), heading.end() + 300) if line_end < 0 else line_end
        pos = heading.end()
        for clause in re.split(r"([，,；;。])", text[heading.end() : end]):
            if clause and clause not in "，,；;。":
                spans += _clause_answer(text, pos, clause)
            pos += len(clause)
    return spans


def _clause_answer(text: str, pos: int, clause: str) -> list[Span]:
    if re.search(
        r"什么|啥|谁|哪|吗|忘|\?|？|(?<![A-Za-z])(?:what|who|which|forgot)(?![A-Za-z])", clause, re.IGNORECASE
    ):
        return []
    en = _ANSWER_EN.search(clause)
    if en is not None:
        return [(pos + en.start("v"), pos + en.end("v"))]
    zh = _ANSWER_ZH.search(clause.rstrip())
    if zh is not None and zh.start() > 1:
        return [(pos + zh.start("v"), pos + zh.end("v"))]
    return []


def in_sentence_of_a_secret(text: str, found: list[Span]) -> list[Span]:
    """Codes a sentence gives after a secret is named or found in it: the value it was changed to,
    a lock's combination, and further codes of the shape of one found."""
    spans: list[Span] = []
    ordered = sorted(found)
    for sentence in re.finditer(rf"[^{_STOP}]+", text):
        start, end = sentence.span()
        body = sentence.group()
        named = _NAMED.search(body) is not None
        if named:
            spans += [(start + m.start("v"), start + m.end("v")) for m in CHANGED_TO.finditer(body)
                      if not MEASURE.match(body, m.end("v"))]  # fmt: skip
        if _LOCK.search(body):
            spans += [(start + m.start("v"), start + m.end("v")) for m in COMBINATION.finditer(body)]
        shapes_seen: set[int] = set()  # each code length is looked for once a sentence
        for a, b in ordered[
            bisect.bisect_left(ordered, (start, start)) : bisect.bisect_left(ordered, (end, end))
        ]:
            if b - a not in shapes_seen:
                shapes_seen.add(b - a)
                spans += _same_shape(text, a, b, end)
    return spans


def _same_shape(text: str, start: int, end: int, stop: int) -> list[Span]:
    """Further capitals-only codes of the same length after the one found (a typed-wrong code, then the right one)."""
    value = text[start:end]
    if not re.fullmatch(r"[A-Z]{5,10}", value):
        return []
    pattern = re.compile(rf"(?<![A-Za-z0-9])[A-Z]{{{len(value)}}}(?![A-Za-z0-9])")
    return [m.span() for m in pattern.finditer(text, end, stop)]
