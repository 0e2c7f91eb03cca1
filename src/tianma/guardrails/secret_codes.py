"""The secrets people name loosely: codes that open something, recovery words, a value a few words
after its name. Patterns and checks for :mod:`tianma.guardrails.secrets`, which ranks them after
its exact rules (a value they both find is typed by the exact rule).

| kind | matches | guard against false positives |
|---|---|---|
| access_code | 门禁码/开门码/门锁/解锁码/锁屏码/开机密码/保险柜/储物柜/取件码/备用码/恢复码/登录码/令牌/密钥…, door/gate/garage/alarm/keypad/locker/safe/unlock/screen/backup/recovery/login code, pin, combination, combo, key — then, within the same clause and a few words, a value: 3–10 digits (or groups joined by ``-`` or spaces, a trailing ``#``), a token of letters and digits, or groups of capitals like ``ABCD-EFGH-IJKL`` | no number in the words between (a digit inside a word, “2FA”, is a word); a count or duration after the number ("6位", "60 seconds"); an 11-digit phone number is too long; postal, zip, area and country codes are not secrets |
| password | passphrase (for my ssh key) is/: several words to the end of the clause | talk about passphrases (a/the/is/what … first) |
| seed_phrase | 助记词/恢复短语, seed/recovery/backup/secret phrase, mnemonic (words) + 12–24 words | fewer than 12 words is talk about a phrase |
| security_answer | mother's maiden name (, an aside,) is X; 妈妈/母亲的娘家姓 是 X | question words |
"""

from __future__ import annotations

import re

SP = r"[ \t\u00a0\u3000]"
"""Inline spaces: a secret's name and its value never span lines."""
ASCII_START = r"(?<![A-Za-z0-9])"
"""An ASCII word starts here (``\b`` would treat Han as a word character)."""

# fmt: off
_SP, _A = SP, ASCII_START
_CLAUSE_STOP = r"。！？!?；;，,\n"
_ZH_LEAD = (
    r"(?:门禁|开门|门锁|单元门|大门|密码锁|解锁|锁屏|屏保|开机|保险柜|保险箱|储物柜|柜子|取件|备用|备份|恢复|登录|登陆|安全|动态|"
    r"取款|支付|转账|交易|管理员|后台)(?:码|密码|口令|组合|令牌)|动态令牌|安全令牌|令牌码|恢复密钥|备用码|恢复码|密钥|秘钥"
)
_EN_LEAD = (
    rf"{_A}(?:door|gate|garage|alarm|keypad|lock|locker|safe|entry|access|building|front[- ]door|unlock|lock[- ]?screen|screen|"
    rf"backup|recovery|login|log-in|bank|phone|laptop|computer|wi-?fi|router|network)"
    rf"{_SP}+(?:codes?|pins?|combination|combo|key|passkey)(?![A-Za-z])"
)
_GAP = rf"(?:[^0-9{_CLAUSE_STOP}]|(?<=[A-Za-z])[0-9]|[0-9](?=[A-Za-z]))*?"
"""The words between a code's name and its value: no number of their own (a digit inside a word,
“2FA”, is a word)."""
_DIGIT_VALUE = r"(?:[0-9]{1,10}(?:-[0-9]{1,10}){1,5}|[0-9]{2,10}(?: [0-9]{2,10}){1,5}|[0-9]{3,10})#?"
_GROUPED_VALUE = r"[A-Z0-9]{4,8}(?:-[A-Z0-9]{4,8}){2,7}"
_MIXED_VALUE = r"(?=[A-Za-z0-9@#$%^&*!_.+=-]*[0-9])(?=[A-Za-z0-9@#$%^&*!_.+=-]*[A-Za-z])[A-Za-z0-9@#$%^&*!_.+=-]{6,64}"
_ONE = rf"(?:{_GROUPED_VALUE}|{_MIXED_VALUE}|{_DIGIT_VALUE})(?![0-9A-Za-z])"
"""One code; a list of them (backup codes) is taken whole."""
# fmt: on

ACCESS_CODE = re.compile(
    rf"(?:{_ZH_LEAD}|{_EN_LEAD})(?P<gap>{_GAP})(?<![A-Za-z0-9])(?P<v>{_ONE}(?:[ ,，、/]+{_ONE})*)(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_MEASURE_AFTER = re.compile(
    r"[ \t]*(?:位|个|字|次|天|周|月|年|号|分钟|小时|秒|元|块|%|[- ]?(?:characters?|chars?|digits?|letters?|numbers?|"
    r"times?|tries|attempts?|seconds?|secs?|minutes?|mins?|hours?|days?|weeks?|months?|years?|people|dollars?)(?![A-Za-z]))",
    re.IGNORECASE,
)
_NOT_SECRET_BEFORE = re.compile(r"(?:邮编|邮政编码|区号|postal|zip|area|country|post)\W*$", re.IGNORECASE)

_WORD = r"(?:[A-Za-z]{2,12}|[\u4e00-\u9fff]{1,4})"
SEED_PHRASE = re.compile(
    rf"(?:助记词|恢复短语|{_A}(?:seed|recovery|backup|secret|wallet)(?:{_SP}+(?:phrase|words))|{_A}mnemonic(?:{_SP}+(?:phrase|words))?)"
    rf"[^A-Za-z\u4e00-\u9fff\n]{{0,12}}(?:(?:is|are|was|是|为)[^A-Za-z\u4e00-\u9fff\n]{{0,4}})?"
    rf"(?P<v>{_WORD}(?:[ ,，、]+{_WORD}){{11,23}})",
    re.IGNORECASE,
)
SEED_PHRASE_ZH = re.compile(
    r"(?:助记词|恢复短语|种子短语)[^\n]{0,12}?[:：]\s*(?P<v>[\u4e00-\u9fff](?:[ \t、,，]+[\u4e00-\u9fff]){11,23})(?![\u4e00-\u9fff])"
)
"""A Chinese recovery phrase: 12–24 single characters, spaced, after its name (助记词（中文版）：仰 铁 泉 …)."""
KEYPAD = re.compile(
    r"按\s*(?P<v>[0-9]{3,8})\s*(?:再按|然后按|后按|加)?\s*(?:#|＃|井号|井字键)"
    r"|(?<![A-Za-z])(?i:star|\*)\s*,?\s*(?P<w>[0-9](?:\s*,\s*[0-9]|\s+[0-9]){2,7})\s*,?\s*(?i:pound|hash|#)"
)
"""Digits keyed in on a door's keypad: 先按 0528 再按#, "star, 4, 0, 2, 9, pound"."""
_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
SPELLED_CODE = re.compile(
    rf"{_A}(?i:pin|passcode|code|password|combination|combo)(?:{_SP}+(?i:is|was){_SP}*[:：]?|{_SP}*[:：=]|['’]s){_SP}*"
    rf"(?P<v>(?i:(?:star|hash|pound){_SP}*,?{_SP}+)?(?i:{_DIGIT_WORD}[ ,-]+){{2,9}}(?i:{_DIGIT_WORD}))(?![A-Za-z])"
)
"""A code spelled out in words: "my debit card PIN is four nine one six", "buzzer code is star four four oh nine"."""
PASSPHRASE = re.compile(
    rf"{_A}pass[- ]?phrase(?:{_SP}+(?:for|of|to|on){_SP}+(?:[^\s:：,，.。?？]+{_SP}+){{0,3}}?[^\s:：,，.。?？]+)?{_SP}*(?:is|was|[:：=]){_SP}*"
    r"(?P<v>[A-Za-z0-9'’-]+(?:[ \t]+[A-Za-z0-9'’-]+){1,9})(?=[ \t]*(?:[.,;!。，；！\n]|$))",
    re.IGNORECASE,
)
"""A passphrase of several words (“passphrase for my ssh key: correct horse battery staple”): the
words to the end of the clause."""
MAIDEN_NAME = re.compile(
    rf"(?:{_A}(?:mother|mom|mum)['’]?s{_SP}+maiden{_SP}+name(?:{_SP}*[,，][^,，\n]{{1,40}}[,，])?{_SP}*(?:is|was|[:：=]){_SP}*|(?:妈妈|母亲)的?(?:娘家姓|婚前姓)(?:是|为|[:：]){_SP}*)"
    r"(?P<v>[A-Z][A-Za-z'’-]{1,30}|[\u4e00-\u9fff]{1,3})",
    re.IGNORECASE,
)


def access_code_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The value after a code's name, unless it is a count, a duration, a phone number or a postal code."""
    start, end = m.start("v"), m.end("v")
    value = text[start:end].rstrip(".-")
    end = start + len(value)
    digits = sum(ch.isdigit() for ch in value)
    numeric = digits == len(value.replace("-", "").replace(" ", "").rstrip("#"))
    if numeric and (digits < 3 or _MEASURE_AFTER.match(text, end)):
        return None
    if re.fullmatch(r"1[3-9][0-9]{9}", value) or _NOT_SECRET_BEFORE.search(m.group("gap")):
        return None
    if re.search(r"(?:问|什么|多少|忘|怎么|how|what|forgot)", m.group("gap"), re.IGNORECASE):
        return None
    return start, end


def span_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The value group as matched."""
    return m.start("v"), m.end("v")


def keypad_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The digits of a keypad sequence, whichever form matched."""
    group = "v" if m.group("v") is not None else "w"
    return m.start(group), m.end(group)


_NOT_A_PHRASE = frozenset("a an the is it my your what how should can could do does to be any not one".split())  # noqa: SIM905


def passphrase_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """Words that are not talk about passphrases (“a passphrase is a longer password”)."""
    if m.group("v").split()[0].lower() in _NOT_A_PHRASE:
        return None
    return m.start("v"), m.end("v")


def maiden_name_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """A name, not a question word."""
    value = m.group("v")
    if value.lower() in {"what", "who", "the", "a", "my", "not"} or value in {"什么", "谁", "啥"}:
        return None
    return m.start("v"), m.end("v")


_QUESTION_NAMED = re.compile(
    r"密保|安全问题|保密问题|密码提示|(?<![A-Za-z])(?:security|secret|recovery)\s+questions?|password\s+hint", re.IGNORECASE
)
QA_ANSWER = re.compile(
    rf"[?？]{_SP}*(?:答案|回答|{_A}(?:answer|ans|a)(?![A-Za-z]))(?:{_SP}*(?:是|为|is|was))?{_SP}*[:：=]?{_SP}*"
    r"[“\"'「]?(?P<v>[\u4e00-\u9fff]{1,8}|[A-Z][A-Za-z.'’-]*(?:[ \t]+[A-Z][A-Za-z'’-]*){0,2}|[A-Za-z0-9_-]{2,30})",
    re.IGNORECASE,
)
"""The answer written after a question (“我的第一个宠物叫什么？答案：豆豆”, “first pet? answer: Rex”), when
the message names a security question anywhere — before or after (“…（这是我的密保答案）”)."""
NETWORK_KEY = re.compile(
    rf"(?:密钥|{_A}(?:key|passkey|pass|pw))(?:{_SP}*(?:is|是|为))?{_SP}*[:：=]?{_SP}*(?<![A-Za-z0-9])(?P<v>{_MIXED_VALUE})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
"""A key given with a network named in the message (“wifi: HomeNet5G, key is sunflower88”): letters
and a digit, six characters or more."""
_NETWORK_NAMED = re.compile(r"wi-?fi|wlan|ssid|router|hotspot|network|无线|路由器|热点|网络", re.IGNORECASE)


def qa_answer_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """An answer to a named security question, not a question word."""
    if not _QUESTION_NAMED.search(text):
        return None
    value = m.group("v")
    if re.fullmatch(r"什么|啥|谁|哪里?|忘了|不记得|what|who|the|a|it|my|not|no|yes|is", value, re.IGNORECASE):
        return None
    return m.start("v"), m.end("v")


def network_key_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """A key in a message about a network."""
    return (m.start("v"), m.end("v")) if _NETWORK_NAMED.search(text) else None
