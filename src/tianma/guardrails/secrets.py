"""Secret detection and redaction: passwords, codes and keys are never stored, even when the user asks.

| kind | matches | guard against false positives |
|---|---|---|
| private_key | a whole PEM block ``-----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----`` (RSA, EC, DSA, OpenSSH, encrypted, PGP ``PRIVATE KEY BLOCK``), or an unterminated one up to its last base64 line; 私钥/private key 是/is + a long random string | public keys and certificates are not secrets |
| token | JWT ``eyJ….….…`` anywhere; ``Bearer <token>``; ``Authorization: Basic <base64>`` | the bearer token needs ≥ 20 characters with letters and digits ("the bearer of bad news") |
| api_key | anywhere: ``sk-…``/``sk-proj-…``/``sk-ant-…``, ``sk_live_…``, ``ghp_/gho_/ghu_/ghs_/ghr_…``, ``github_pat_…``, ``AKIA``/``ASIA`` + 16, ``xox[abposr]-…``, ``AIza…``, ``glpat-…``, ``hf_…``, ``npm_…``, ``pypi-…``; after api key / secret key / access key / token / secret / client secret / 密钥 / 秘钥 / 令牌 + is/:/=/是: a random-looking string (≥ 16 characters, letters and digits) | prefixes need a long tail with letters and digits (SK-II, sk-8, task-123, hf_hub_download); a lead-in value must look random, so code (``os.getenv(…)``) and words do not match |
| security_answer | 密保/安全问题…的答案/回答 是/为/：X (Han allowed); the answer to my security question is X; my security (question) answer is X; a security question … (the) answer is X, within 80 characters | question words (是什么, 吗, what, the …) are not answers |
| cvv | CVV/CVC/CVN(码)/安全码/卡背面三位数 + 3–4 digits; card security code / the 3-digit code on the back is … / the three numbers on the back of my card are … | needs the digits ("what is a CVV?", "CVV是三位数") |
| pin | PIN/PIN码/PIN code/PUK + 4–8 digits; set my PIN to … | needs the digits ("my PIN was wrong twice"); a count ("4 digits", "6位") is not a PIN |
| otp | 验证码/校验码/动态码/动态密码/短信码/一次性密码, verification/OTP/2FA/MFA/login/one-time code + 4–8 digits (or 3+3); "482913 is/as your … code", "482913是您的…验证码" | needs the digits; a longer digit run (a phone or order number) and a duration ("60秒", "10 minutes") are not codes |
| password | 密码/口令 是/为/：/=/改成 X, or 密码 + X with a digit and ≥ 6 characters; password/passwd/passcode/passphrase/pwd/pw is/:/=/'s X, "the root password for the server is X", "changed my password to X", "passcode 739184"; my/our/wifi … password is + 2–6 plain words to the end of the clause ("correct horse battery staple") | the value must look like one: code (``input()``, ``None``, ``password == ""``), templates (``<password>``, ``***``), counts ("8 characters", "8位") and stop words (wrong, required, too …) do not match; an English plain word needs my/our/wifi/remember before it and the end of the clause after it; several words are talk when a grammar word opens them, a stop word or a verb form (…ing, …ed, …ly) follows the first, or they name what it is made of (name, birthday) |

Ranked after these: the loosely named secrets of :mod:`tianma.guardrails.secret_codes` (door and
locker codes, unlock and backup codes, a code a few words after its name, recovery phrases,
a mother's maiden name), then the secrets known by their shape or by a name earlier in the
sentence, :mod:`tianma.guardrails.secret_shapes` (credentials in URLs and command lines, card
numbers, long random strings, ``user / password`` pairs, codes listed under “backup codes”), and
passwords of Han characters, :mod:`tianma.guardrails.secret_han` (“wifi密码是天王盖地虎”).

A value is the run of non-space characters after the lead-in, up to a Han character or Chinese
punctuation ("密码是abc123，记住" keeps "，记住"; a value of Han characters is
:mod:`~tianma.guardrails.secret_han`'s), without a trailing sentence mark (``. , ; : ?``); a
quoted value is taken between its quotes. When spans overlap, the kind higher in the table wins,
except that a key or private key found only through its lead-in ("api key is …", "私钥是 …") ranks
last. Run this before PII redaction, so a key is removed whole.
Placeholders (ours and PII's) never match, so redacting twice changes nothing. Nothing here is
kept on request: unlike PII, 记住/remember does not make a password storable.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tianma.guardrails import secret_answers as answers
from tianma.guardrails import secret_codes as codes
from tianma.guardrails import secret_context as context
from tianma.guardrails import secret_han as han
from tianma.guardrails import secret_lists as lists
from tianma.guardrails import secret_shapes as shapes
from tianma.guardrails.pii import PiiMatch, replace_spans, scrub
from tianma.text.placeholders import PII_PLACEHOLDERS, SECRET_PLACEHOLDERS

PLACEHOLDERS = SECRET_PLACEHOLDERS
"""The typed, bilingual placeholder that replaces each kind of secret value (:mod:`tianma.text.placeholders`)."""

NOTICE_ZH = "天马不保存密码、验证码和密钥，刚才那条已从记忆里删掉了，这类信息请存进密码管理器或手机的钥匙串。"
"""What the reply tells a Chinese-speaking user when a secret was removed."""

NOTICE_EN = (
    "tianma doesn't keep passwords, codes or keys, so I removed it from what I store — "
    "please keep it in a password manager or your phone's keychain."
)
"""What the reply tells any other user when a secret was removed."""


@dataclass(frozen=True, slots=True)
class SecretMatch:
    """One secret value found in a text."""

    kind: str
    """A key of ``PLACEHOLDERS``: ``password``, ``pin``, ``otp``, ``api_key``, ``private_key``,
    ``token``, ``security_answer``, ``cvv``, ``access_code``, ``seed_phrase`` or ``card_number``."""
    start: int
    """Offset of the value's first character in the original text."""
    end: int
    """Offset one past the value's last character."""
    text: str
    """The secret value only, as written (not the lead-in words)."""


# fmt: off
_SP, _A = codes.SP, codes.ASCII_START           # inline spaces; ASCII word boundaries
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_ZH_PUNCT = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\u2014\u2018-\u201f\u2026"
_RUN = rf"[^\s{_HAN}{_ZH_PUNCT}]{{1,512}}"      # a value stops at space, Han or Chinese punctuation (longer: a key, found by its shape)
_VAL = rf"(?:[\"'“‘「`](?P<q>[^\"'“”‘’「」`\n]{{1,64}})[\"'”’」`]|(?P<v>{_RUN}))"
_TOK = rf"[^\s.,;:!?\"'{_ZH_PUNCT}]+"            # one word of a "for the server" bridge
_BRIDGE = rf"(?P<bridge>{_SP}+(?:for|of|to|on|at|in){_SP}+(?:{_TOK}{_SP}+){{0,3}}?{_TOK})?"
_ZH_VERB = r"(?:就是|是|为|為|改成了?|改为|设成了?|设为|设置成了?|设置为|换成了?)"
# A connector between lead-in and value; ``=`` but never ``==`` (a comparison in code).
_CONN = (
    rf"(?:{_SP}*[\"']?{_SP}*(?:[:：]|(?P<eq>=)(?!=)){_SP}*"
    rf"|{_SP}+(?:is|was|will{_SP}+be)(?:{_SP}+(?:now|still|just|actually|currently))?(?:{_SP}*[:：]{_SP}*|{_SP}+)"
    rf"|['’]s{_SP}+"
    rf"|{_SP}*(?P<zh>{_ZH_VERB})(?:{_SP}*[:：])?{_SP}*)"
)
# No connector, only a space ("passcode 739184"); never after a bridge ("password for the server").
_BARE = rf"(?(bridge)(?!)|(?P<bare>{_SP}+))"
_CONN_ANY = re.sub(r"\(\?P<\w+>", "(?:", _CONN)  # the same connector without named groups
_DIGITS_END = r"(?![0-9A-Za-z])"

# The body never crosses another BEGIN, so a pile of unterminated headers stays linear to scan.
_PEM = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:(?!-----BEGIN ).)*?"
    r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    re.DOTALL,
)
# A pasted block cut short: the header, optional Proc-Type/DEK-Info lines and every base64 line.
_PEM_OPEN = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:\s+(?:Proc-Type|DEK-Info|Comment|Version):[^\n]*|\s+[A-Za-z0-9+/]{16,}={0,2})*"
    r"(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]{1,15}={0,2}(?=[ \t]*(?:\r?\n|$)))?"  # the short last line
)
_JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*(?![A-Za-z0-9_-])")
_KEY_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)[0-9]{2}-)?(?P<sk>[A-Za-z0-9_-]{20,})"  # OpenAI, Anthropic, DeepSeek
    r"|[sr]k_(?:live|test)_(?P<stripe>[A-Za-z0-9]{16,})"
    r"|gh[pousr]_(?P<gh>[A-Za-z0-9]{30,})"
    r"|github_pat_(?P<ghpat>[A-Za-z0-9_]{30,})"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abposr]-(?P<slack>[A-Za-z0-9-]{10,})"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|glpat-(?P<gitlab>[A-Za-z0-9_-]{20,})"
    r"|hf_(?P<hf>[A-Za-z0-9]{30,})"
    r"|npm_(?P<npm>[A-Za-z0-9]{36})"
    r"|pypi-(?P<pypi>[A-Za-z0-9_-]{50,})"
    r")(?![A-Za-z0-9_-])"
)
_BEARER = re.compile(rf"{_A}[Bb]earer{_SP}+(?P<v>[A-Za-z0-9._~+/-]{{20,}}=*)(?![A-Za-z0-9._~+/=-])")
_BASIC = re.compile(
    rf"Authorization{_SP}*:{_SP}*Basic{_SP}+(?P<v>[A-Za-z0-9+/]{{8,}}={{0,2}})(?![A-Za-z0-9+/=])", re.IGNORECASE
)

_SA_ZH = re.compile(
    r"(?:密保|安全问题|安全提示问题|密码提示问题|保密问题)[^\n]{0,30}?(?:答案|回答)"
    rf"(?:{_SP}*(?:就是|是|为|:|：))+{_SP}*[“\"'「]?(?P<v>[^\s，。！？；、,;!?（）()“”\"'\[\]【】「」]{{1,30}})"
)
_SA_EN = re.compile(
    rf"{_A}(?:(?:security|secret){_SP}+(?:question{_SP}+)?answer(?:{_SP}+(?:for|to){_SP}+(?:{_TOK}{_SP}+){{0,4}}?{_TOK})?"
    rf"|(?:security|secret){_SP}+questions?\b[^\n?!]{{0,80}}?\b(?:the{_SP}+|its{_SP}+|my{_SP}+)?answer"
    rf"|answer{_SP}+(?:to|for){_SP}+(?:my|the|our){_SP}+(?:{_TOK}(?:['’]s)?{_SP}+){{0,3}}?(?:security|secret){_SP}+questions?"
    rf"(?:{_SP}*(?:\([^)\n]{{0,40}}\)|[\"“'][^\"”'\n]{{1,40}}[\"”']|{_SP}+about{_SP}+(?:{_TOK}{_SP}+){{0,3}}?{_TOK}))?)"
    rf"(?:{_SP}+(?:is|was)(?:{_SP}*[:：])?{_SP}+|{_SP}*[:：=]{_SP}*|['’]s{_SP}+|{_SP}*{_ZH_VERB}{_SP}*){_VAL}",
    re.IGNORECASE,
)
_CVV = re.compile(
    rf"{_A}(?:(?:CVV2?|CVC2?|CVN)码?|安全码|(?:卡片?|信用卡)?背面(?:的)?(?:三位数字?|3位数字?|后三位|那?三位|那?三个数字?|数字)"
    rf"|(?:card{_SP}+)?security{_SP}+code(?:{_SP}+on{_SP}+the{_SP}+back(?:{_SP}+of{_SP}+(?:my|the){_SP}+card)?)?"
    rf"|(?:three|3)[- ]digits?{_SP}+(?:code|number){_SP}+on{_SP}+the{_SP}+back(?:{_SP}+of{_SP}+(?:my|the){_SP}+card)?"
    rf"|(?:three|3|four|4){_SP}+(?:numbers|digits){_SP}+on{_SP}+the{_SP}+back{_SP}+of{_SP}+(?:my|the|your|his|her|our){_SP}+"
    rf"(?:(?:credit|debit|bank|visa|amex){_SP}+)?card(?:{_SP}+(?:are|were))?)"
    rf"(?![A-Za-z])(?:{_CONN_ANY}|{_SP}*)(?P<v>[0-9]{{3,4}}){_DIGITS_END}",
    re.IGNORECASE,
)
_PIN = re.compile(
    rf"{_A}(?:PIN|PUK)(?:{_SP}*(?:码|code|number|no\.?))?(?![A-Za-z]){_BRIDGE}"
    rf"(?:{_CONN_ANY}|{_SP}*)(?P<v>[0-9]{{4,8}}){_DIGITS_END}",
    re.IGNORECASE,
)
_OTP_WORDS = (
    r"(?:短信|手机|登录|登陆|注册|支付|邮箱|安全)?(?:验证码|校验码)|动态(?:验证)?码|动态密码|短信码|一次性(?:密码|验证码|码)"
    rf"|{_A}(?:(?:verification|verify|security|login|log-in|sign-in|sign{_SP}in|auth|authentication|authenticator"
    rf"|access|2fa|two-factor|two{_SP}factor|mfa|sms|one-time|one{_SP}time|otp|totp){_SP}+code"
    rf"|one[- ]time{_SP}+(?:password|passcode|pin)|otp|totp|2fa|mfa"
    # "my bank just texted me a code 471958": a code that arrived by message is a one-time code
    rf"|(?:texted|sent|messaged|emailed|sms(?:ed)?){_SP}+(?:me|us){_SP}+(?:a|the|this|another){_SP}+code"
    # an SMS pasted as it came: "Venmo: Your code is 418 302."
    rf"|{_A}your{_SP}+(?:[A-Za-z]+{_SP}+){{0,2}}?code(?={_SP}+(?:is|was){_SP}))"
)
_OTP_VALUE = rf"(?:G-)?(?P<v>[0-9]{{4,8}}|[0-9]{{3}}[ -][0-9]{{3}}){_DIGITS_END}"
_OTP = re.compile(rf"(?:{_OTP_WORDS})(?![A-Za-z]){_BRIDGE}(?:{_CONN_ANY}|{_SP}*){_OTP_VALUE}", re.IGNORECASE)
# SMS style, the code first: "G-482913 is your Google verification code", "482913是您的登录验证码".
_OTP_FIRST = re.compile(
    rf"(?<![0-9A-Za-z-])(?:G-)?(?P<v>[0-9]{{4,8}}){_SP}*"
    rf"(?:(?:is|as){_SP}+your{_SP}+(?:[A-Za-z-]+{_SP}+){{0,3}}?code(?![A-Za-z])"
    r"|(?:是|为)(?:您|你)(?:的|本次)[^\s，。,.]{0,8}?(?:验证码|校验码|动态码))",
    re.IGNORECASE,
)
_PW_ZH = re.compile(
    r"(?:密码|口令|密碼)"
    rf"(?:(?P<conn>{_SP}*(?:(?P<zh>{_ZH_VERB})(?:{_SP}*[:：])?|[:：]|(?P<eq>=)(?!=)){_SP}*)|(?P<bare>{_SP}*)){_VAL}"
)
_PW_EN = re.compile(
    rf"{_A}(?P<kw>password|passwd|passcode|passphrase|pwd|pw)(?![A-Za-z0-9_]){_BRIDGE}"
    rf"(?:(?P<conn>{_CONN})|{_BARE}){_VAL}",
    re.IGNORECASE,
)
# "my wifi password is purple monkey dishwasher": several plain words to the end of the clause.
_PW_WORDS = re.compile(
    rf"{_A}(?P<kw>password|passwd|passcode)(?![A-Za-z0-9_]){_BRIDGE}{_SP}*(?:is|was|['’]s|[:：=]){_SP}*"
    rf"(?P<v>[A-Za-z][A-Za-z'’-]*(?:[ \t]+[A-Za-z][A-Za-z'’-]*){{1,5}})"
    rf"(?={_SP}*(?:$|[.,;!?。，！？；\n)]|(?:and|but|so|please|remember|ok|okay|thanks|btw)(?![A-Za-z])))",
    re.IGNORECASE,
)
_CHANGED_TO = (
    rf"{_A}(?:chang(?:e|ed|ing)|set|updat(?:e|ed|ing)|reset(?:ting)?){_SP}+(?:my|the|our|his|her|their){_SP}+"
    rf"(?:[A-Za-z-]+{_SP}+){{0,2}}?"
)
# "My school email password, in case I forget it: Plantag3net!Ely": an aside, then the colon.
_PW_ASIDE = re.compile(
    rf"{_A}(?P<kw>password|passcode|passwd)(?![A-Za-z0-9_]),[^:：\n]{{1,40}}?[:：]{_SP}*{_VAL}", re.IGNORECASE
)
_PW_CHANGED = re.compile(rf"{_CHANGED_TO}(?P<kw>password|passcode|passwd){_SP}+to{_SP}+{_VAL}", re.IGNORECASE)
_PIN_CHANGED = re.compile(
    rf"{_CHANGED_TO}(?:PIN|PUK)(?:{_SP}+code)?{_SP}+to{_SP}+(?P<v>[0-9]{{4,8}}){_DIGITS_END}", re.IGNORECASE
)
_KEY_WORDS = (
    r"api[ _-]?keys?|apikey|api[ _-]?(?:token|secret)|secret[ _-]?(?:access[ _-]?)?key|access[ _-]?key(?:[ _-]?id)?"
    r"|access[ _-]?token|auth[ _-]?token|refresh[ _-]?token|bot[ _-]?token|client[ _-]?secret|app[ _-]?secret"
    r"|webhook[ _-]?secret|token|secret"
)
_KEY_LEAD = re.compile(
    rf"(?:{_A}(?:{_KEY_WORDS})(?![A-Za-z0-9])|(?:API|api){_SP}*密钥|密钥|秘钥|令牌){_BRIDGE}"
    rf"(?:(?P<conn>{_CONN})|{_BARE}){_VAL}",
    re.IGNORECASE,
)
_PRIVATE_LEAD = re.compile(
    rf"(?:{_A}private{_SP}+key(?![A-Za-z0-9])|私钥){_BRIDGE}(?:(?P<conn>{_CONN})|{_BARE}){_VAL}",
    re.IGNORECASE,
)

_HAN_RE = re.compile(f"[{_HAN}]")
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
_NUMERIC = re.compile(r"[0-9]+(?:[-~+][0-9]*)?")
_RANDOM_CHARS = re.compile(r"[A-Za-z0-9_\-+/=.~]+")
# A count or a duration after a number: "8位", "8 characters", "60秒", "10 minutes".
_MEASURE = re.compile(
    rf"{_SP}*(?:位|个|字|次|天|周|月|年|号|分钟|小时|秒|元|块|[- ]?(?:characters?|chars?|digits?|letters?|numbers?"
    r"|symbols?|times?|tries|attempts?|seconds?|secs?|minutes?|mins?|hours?|days?|weeks?|months?|years?)(?![A-Za-z]))",
    re.IGNORECASE,
)
# After an English plain-word value the clause must end, or it is prose ("is strong enough").
_CLAUSE_END = re.compile(
    rf"{_SP}*(?:$|[.,;!?。，！？；\n)]|[{_HAN}]|(?:and|but|so|please|remember|ok|okay|thanks|btw)(?![A-Za-z]))",
    re.IGNORECASE,
)
# Whose password it is: an English plain word is a password only for "my/our/wifi … password".
_OWNER = re.compile(r"(?<![A-Za-z])(?:my|our|wi-?fi|router|remember|note|save)(?![A-Za-z])", re.IGNORECASE)
_CALL = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*[(\[]")  # input(, request.form[
_ATTRIBUTE = re.compile(r"[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)+")   # self.pw; not Mary.Jane1
_TEMPLATE = re.compile(
    r"^(?:<[^>]*>|\{[^}]*\}|\$\{?[A-Za-z_]+\}?|%[A-Za-z_]+%|[:@][A-Za-z_]+|[*•·]+|[xX]{3,}|\.{3,}|…+)$"  # SQL :name, @name
    r"|^(?:your|my|the|new|old)[_-]?(?:password|pass|pwd|key|token|secret|code)(?:[_-]?here)?$"
    r"|example|placeholder|redacted",
    re.IGNORECASE,
)
_ADJECTIVE_ENDINGS = ("ed", "ing", "ly", "ful", "ous", "ive", "able", "ible", "less", "ness")
# Words after "password is" that are talk about the password, not the password.
_STOP_GRAMMAR = (  # determiners, pronouns, prepositions, particles ("the password is the same as …")
    "a an the my your our his her their its this that these those it what which who where when how why there here "
    "to of for on in at by with from about like as into under below above over after before inside outside "
    "is was are were be been being not no yes also too so very really just only still now always never ever again "
    "and or but if because mine yours ours theirs please thanks"
)
_STOP_DESCRIPTIONS = (  # what people say about a password ("my password is too weak", "… was leaked")
    "same different case sensitive case-sensitive set reset changed change new old default wrong right correct "
    "incorrect invalid valid expired expiring weak strong short long secure insecure safe unsafe good bad fine ok "
    "okay easy hard simple complex complicated secret private personal unknown important required optional "
    "mandatory needed necessary missing empty blank hidden encrypted hashed stored saved written printed shown "
    "visible attached elsewhere somewhere something nothing anything everything forgotten lost gone locked blocked "
    "compromised leaked stolen hacked working accepted rejected denied protected enabled disabled masked removed "
    "deleted enough less more most least longer shorter stronger weaker better worse great terrible awful obvious "
    "common popular usual standard typical normal random unique temporary"
)
_STOP_CODE = (  # values and type names in code ("password: str", "password = None")
    "none null nil true false undefined str string int integer bytes bool boolean text varchar char any object"
)
_STOP = frozenset(f"{_STOP_GRAMMAR} {_STOP_DESCRIPTIONS} {_STOP_CODE}".split())
_GRAMMAR = frozenset(_STOP_GRAMMAR.split())
_HINT_WORDS_TEXT = (  # a password described by what it is made of ("my dog's name and birth year")
    "name names birthday birth date anniversary number numbers letters characters digits symbols word words phrase "
    "thing things stuff one ones usual"
)
_HINT_WORDS = frozenset(_HINT_WORDS_TEXT.split())
# fmt: on


def _trim(text: str, start: int, end: int) -> int:
    """End of a value without a trailing sentence mark or an unbalanced closing bracket/quote."""
    while end > start:
        last = text[end - 1]
        value = text[start:end]
        if (
            last in ".,;:?"
            or (
                last in ")]}>"
                and value.count(last) > value.count({")": "(", "]": "[", "}": "{", ">": "<"}[last])
            )
            or (last in "\"'`" and value.count(last) % 2 == 1)
        ):
            end -= 1
        else:
            break
    return end


def _value_span(text: str, m: re.Match[str]) -> tuple[int, int, bool] | None:
    """The value's span in ``text`` and whether it was quoted, or None when nothing is left."""
    if m.group("q") is not None:
        return m.start("q"), m.end("q"), True
    start = m.start("v")
    end = _trim(text, start, m.end("v"))
    return (start, end, False) if end > start else None


def _group(m: re.Match[str], name: str) -> bool:
    """Whether the optional named group ``name`` took part in the match."""
    return name in m.re.groupindex and m.group(name) is not None


_WALLET_KEY = re.compile(
    r"(?i:import|导入|私钥|private|wallet|钱包|metamask|rabby|phantom)(?P<gap>[^\n]{0,80}?)"
    r"(?<![0-9A-Za-z])(?P<v>(?:0x)?[0-9a-fA-F]{64})(?![0-9A-Za-z])"
)
_CARD_DETAILS = re.compile(
    r"(?<![0-9])[0-9]{4}(?:[ -]?[0-9]{4}){3}(?![0-9])[,，;\s]+(?:exp(?:iry|ires|\.)?:?\s*)?(?:0[1-9]|1[0-2])\s*/\s*(?:20)?[0-9]{2}"
    r"[,，;\s]+(?:(?i:cvv2?|cvc2?|security code)[:：\s]*)?(?P<v>[0-9]{3,4})(?![0-9])"
)
"""The code after a card's number and expiry, as card details are pasted: “visa 4024 … 2216, 09/29, 348”."""


def _wallet_key_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """64 hex digits after a wallet's name: its private key, unless named as a transaction or hash."""
    if re.search(r"(?i:\btx|transaction|hash|block|交易|哈希|区块)", m.group("gap")):
        return None
    return m.start("v"), m.end("v")


def _plausible(value: str) -> bool:
    """Shape checks every password-like value passes: not code, not a template, not punctuation."""
    if len(value) < 3 or not any(ch.isalnum() for ch in value) or re.match(r"[A-Za-z_]+=", value):
        return False  # too short, punctuation, or a field of a log line (attempts=3)
    if not value.isdigit() and len(set(value.lower())) == 1:
        return False  # xxxx, ****
    return not (_TEMPLATE.search(value) or _CALL.match(value) or _ATTRIBUTE.fullmatch(value))


def _looks_random(value: str, min_len: int = 16) -> bool:
    """A key or token: long, key characters only, letters and digits, not a repetitive string."""
    return (
        len(value) >= min_len
        and _RANDOM_CHARS.fullmatch(value) is not None
        and any(ch.isdigit() for ch in value)
        and any(ch.isalpha() for ch in value)
        and len(set(value)) >= 8
        and not _TEMPLATE.search(value)
    )


def _english_plain_word_ok(text: str, start: int, end: int, lead_start: int) -> bool:
    """An English word after "password is" is a password only if it cannot be an adjective or a
    clause going on ("is strong enough"), and someone owns it ("my", "wifi", "remember")."""
    value = text[start:end].lower()
    if value.endswith(_ADJECTIVE_ENDINGS) or not _CLAUSE_END.match(text, end):
        return False
    return _OWNER.search(text, max(0, lead_start - 40), lead_start) is not None


def _password(bare_min: int) -> Callable[[str, re.Match[str]], tuple[int, int] | None]:
    def check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
        span = _value_span(text, m)
        if span is None:
            return None
        start, end, quoted = span
        value = text[start:end]
        if not _plausible(value):
            return None
        if _NUMERIC.fullmatch(value) and _MEASURE.match(text, end):
            return None
        # No connector ("wifi密码 88886666", "passcode 739184"): only a value that is obviously one.
        if _group(m, "bare") and (not any(ch.isdigit() for ch in value) or len(value) < bare_min):
            return None
        if quoted and " " in value and _described(value.lower().split()):
            return None  # "the usual", "my dog's name": talk about the password
        if _PLAIN_WORD.fullmatch(value):
            if value.lower() in _STOP:
                return None
            if not quoted:
                if _group(m, "eq"):
                    return None  # password = hashed: a variable, not a value
                chinese = _group(m, "zh") or not _group(m, "kw")
                if not chinese and not _english_plain_word_ok(text, start, end, m.start()):
                    return None
        return start, end

    return check


def _described(words: list[str]) -> bool:
    """Words that talk about a password ("the usual", "my dog's name"), not a password of words."""
    return words[0] in _GRAMMAR or any(w in _HINT_WORDS for w in words)


def _password_words(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """Several plain words after "my … password is": a password of words ("correct horse battery
    staple"), unless they talk about it: a grammar word first ("the same as …"), a stop word after
    the first ("correct but it …", "too weak"), a word of what it is made of (name, birthday),
    words of a verb or an adverb (…ing, …ed, …ly), or no owner (my, our, wifi …) before it."""
    words = m.group("v").lower().split()
    if _described(words) or any(w in _STOP or w.endswith(("ing", "ed", "ly")) for w in words[1:]):
        return None
    if words[0] in _STOP and len(words) < 3:
        return None  # "is correct though": a description and a word more
    if _OWNER.search(text, max(0, m.start() - 40), m.start()) is None:
        return None
    return m.start("v"), m.end("v")


_PASSWORD = _password(6)
_PASSCODE = _password(4)


def _pw_en_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    # "pw"/"pwd" alone are too short to stand without a connector; "passcode 739184" is fine.
    kw = m.group("kw").lower()
    if kw in ("pw", "pwd") and _group(m, "bare"):
        return None
    return (_PASSCODE if kw == "passcode" else _PASSWORD)(text, m)


def _digits_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    return None if _MEASURE.match(text, m.end("v")) else (m.start("v"), m.end("v"))


def _random_check(min_len: int) -> Callable[[str, re.Match[str]], tuple[int, int] | None]:
    def check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
        span = _value_span(text, m)
        if span is None:
            return None
        start, end, _ = span
        if _group(m, "bare") and end - start < 20:
            return None
        return (start, end) if _looks_random(text[start:end], min_len) else None

    return check


def _whole(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    return m.start(), m.end()


def _prefixed_key(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    # A prefix plus a word ("sk-hynix-memory-module-prices") is not a key: the tail needs a digit and a letter.
    tail = next((g for g in m.groups() if g is not None), m.group())
    mixed = any(ch.isdigit() for ch in tail) and any(ch.isalpha() for ch in tail)
    mixed = mixed or (len(tail) >= 20 and any(ch.isupper() for ch in tail) and any(ch.islower() for ch in tail))
    return (m.start(), m.end()) if mixed else None


def _token_value(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    start, end = m.start("v"), _trim(text, m.start("v"), m.end("v"))
    value = text[start:end]
    ok = any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)
    return (start, end) if ok else None


def _basic_value(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    # "Authorization: Basic" is always followed by credentials; base64 of "user:pass" may have no digit.
    return m.start("v"), m.end("v")


_ZH_NOT_ANSWER = re.compile(
    r"什么|啥|多少|怎么|哪|谁|吗|呢|忘|不记得|不知道|对的|错的|正确|错误|^[不没否]|^\["
)


def _security_answer_zh(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    start, end = m.start("v"), _trim(text, m.start("v"), m.end("v"))
    value = text[start:end]
    if end <= start or _ZH_NOT_ANSWER.search(value):
        return None
    if _PLAIN_WORD.fullmatch(value) and value.lower() in _STOP:
        return None
    return start, end


_NEXT_CAPITALISED = re.compile(rf"{_SP}+[A-Z][A-Za-z0-9'’-]*")


def _security_answer_en(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    span = _value_span(text, m)
    if span is None:
        return None
    start, end, quoted = span
    value = text[start:end]
    if quoted:
        return (start, end) if value.strip() and value.lower() not in _STOP else None
    if value.lower() in _STOP or len(value) < 2:
        return None
    if value[0].isupper() and end == m.end("v"):
        # A proper name runs on while capitalised: "Wexford Lighthouse", "New York".
        for _ in range(3):
            nxt = _NEXT_CAPITALISED.match(text, end)
            if nxt is None or nxt.group().strip().lower() in _STOP:
                break
            end = _trim(text, start, nxt.end())
            if end < nxt.end():
                break
    elif _PLAIN_WORD.fullmatch(value) and not _CLAUSE_END.match(text, end):
        return None
    return start, end


_Check = Callable[[str, re.Match[str]], tuple[int, int] | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    check: _Check
    overlapping: bool = True
    """Retry from inside a rejected match (lead-in rules); shape rules scan once, in linear time."""


# Priority order: on overlap the earlier rule wins (a key after "password:" is an api_key).
_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", _PEM, _whole),
    _Rule("private_key", _PEM_OPEN, _whole),
    _Rule("token", _JWT, _whole),
    _Rule("api_key", _KEY_PREFIXED, _prefixed_key),
    _Rule("token", _BEARER, _token_value),
    _Rule("token", _BASIC, _basic_value),
    _Rule("security_answer", _SA_ZH, _security_answer_zh),
    _Rule("security_answer", _SA_EN, _security_answer_en),
    _Rule("cvv", _CVV, _digits_check),
    _Rule("pin", _PIN, _digits_check),
    _Rule("otp", _OTP, _digits_check),
    _Rule("otp", _OTP_FIRST, _digits_check),
    _Rule("password", _PW_ZH, _PASSWORD),
    _Rule("password", _PW_EN, _pw_en_check),
    _Rule("password", _PW_WORDS, _password_words),
    _Rule("pin", _PIN_CHANGED, _digits_check),
    _Rule("password", _PW_CHANGED, _PASSWORD),
    _Rule("password", _PW_ASIDE, _PASSWORD),
    _Rule("api_key", _KEY_LEAD, _random_check(16)),
    _Rule("private_key", _PRIVATE_LEAD, _random_check(32)),
    _Rule("seed_phrase", codes.SEED_PHRASE, codes.span_check),
    _Rule("seed_phrase", codes.SEED_PHRASE_ZH, codes.span_check),
    _Rule("access_code", codes.KEYPAD, codes.keypad_check),
    _Rule("access_code", codes.SPELLED_CODE, codes.span_check),
    _Rule("private_key", _WALLET_KEY, _wallet_key_check),
    _Rule("cvv", _CARD_DETAILS, codes.span_check),
    _Rule("security_answer", codes.MAIDEN_NAME, codes.maiden_name_check),
    _Rule("password", codes.PASSPHRASE, codes.passphrase_check),
    _Rule("access_code", codes.ACCESS_CODE, codes.access_code_check),
    _Rule("security_answer", codes.QA_ANSWER, codes.qa_answer_check),
    _Rule("password", codes.NETWORK_KEY, codes.network_key_check),
    _Rule("password", shapes.URL_CREDENTIALS, shapes.value_group, overlapping=False),
    _Rule("password", shapes.CLI_PASSWORD, shapes.value_group, overlapping=False),
    _Rule("password", shapes.ENV_SECRET, shapes.value_group, overlapping=False),
    _Rule("card_number", shapes.CARD_NUMBER, shapes.card_number_check, overlapping=False),
    _Rule("token", shapes.WEBHOOK, shapes.value_group, overlapping=False),
    _Rule("password", shapes.STRONG_TOKEN, shapes.strong_token_check, overlapping=False),
    _Rule("password", shapes.DOTTED_WORDS, codes.span_check, overlapping=False),
    _Rule("api_key", shapes.LONG_RANDOM, shapes.long_random_check, overlapping=False),
    _Rule("security_answer", shapes.SECURITY_ANSWER, shapes.security_answer_check),
    _Rule("seed_phrase", shapes.SEED_RUN, shapes.seed_run_check, overlapping=False),
    _Rule("password", lists.WIFI_QR, codes.span_check, overlapping=False),
    _Rule("password", lists.QUERY_SECRET, lists.query_secret_check, overlapping=False),
    _Rule("password", lists.CURL_USER, codes.span_check, overlapping=False),
    _Rule("password", lists.APP_PASSWORD, codes.span_check, overlapping=False),
    _Rule("access_code", lists.RECOVERY_KEY, codes.span_check, overlapping=False),
    _Rule("seed_phrase", lists.NUMBERED_WORDS, shapes.seed_run_check, overlapping=False),
    _Rule("security_answer", lists.QUOTED_QUESTION, codes.span_check, overlapping=False),
    _Rule("security_answer", lists.ANSWER_FOR_QUOTED, codes.span_check, overlapping=False),
    _Rule("password", shapes.CREDENTIAL_PAIR, shapes.credential_pair_check),
    _Rule("access_code", shapes.NAMED_VALUE, shapes.named_value_check),
)

_PLACEHOLDER_RE = re.compile(
    "|".join(
        re.escape(p)
        for p in sorted({*PLACEHOLDERS.values(), *PII_PLACEHOLDERS.values()}, key=len, reverse=True)
    )
)


def _matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Every match, including ones that start inside a rejected match ("password: password is X")."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        yield m
        pos = m.start() + 1


_FULL_WIDTH = {c: c - 0xFEE0 for r in ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A)) for c in range(r[0], r[1] + 1)}
_FULL_WIDTH[0xFF0D] = ord("-")
_HAN_DIGITS = re.compile(r"[零〇一二三四五六七八九]{3,}")
_HAN_DIGIT = str.maketrans("零〇一二三四五六七八九", "00123456789")


def _plain(text: str) -> str:
    """The text as the rules read it, character for character (offsets unchanged): full-width
    letters and digits as ASCII (ＴｏｋｙｏＧａｔｅ２０２４, ５８２０４６ come from phones' IMEs) and a
    run of three or more Chinese digits as digits (现在是七三九一五八)."""
    return _HAN_DIGITS.sub(lambda m: m.group().translate(_HAN_DIGIT), text.translate(_FULL_WIDTH))


def find_secrets(text: str) -> list[SecretMatch]:
    """Find passwords, codes, keys and other secrets in a text.

    Args:
        text: a user message or a memory, Chinese or English.

    Returns:
        Non-overlapping matches of the secret values in text order; on overlap the kind higher
        in the module table wins. Placeholders already in the text never match.
    """
    plain = _plain(text)
    if plain == text:
        return _find(text)
    return [SecretMatch(f.kind, f.start, f.end, text[f.start : f.end]) for f in _find(plain)]


def _find(text: str) -> list[SecretMatch]:
    """:func:`find_secrets` on text already made plain."""
    taken = _Taken([m.span() for m in _PLACEHOLDER_RE.finditer(text)])
    found: list[SecretMatch] = []
    for rule in _RULES:
        for m in _matches(rule.pattern, text) if rule.overlapping else rule.pattern.finditer(text):
            span = rule.check(text, m)
            if span is not None and taken.add(*span):
                found.append(SecretMatch(rule.kind, span[0], span[1], text[span[0] : span[1]]))
    codes_found = [(f.start, f.end) for f in found if f.kind in ("access_code", "pin", "password", "otp")]
    loose = [("access_code", span) for span in [*shapes.listed_codes(text), *shapes.sibling_numbers(text, codes_found),
                                                 *lists.in_sentence_of_a_secret(text, codes_found)]]
    loose += [("password", span) for span in lists.listed_passwords(text)]
    # a password of Han characters whose tail an exact rule took (“改成了小明1998”): its Han part too
    loose += [("password", part) for span in han.han_passwords(text) for part in taken.free_parts(*span)]
    loose += [("security_answer", span)
              for span in [*shapes.quoted_answers(text), *lists.listed_answers(text), *answers.topic_answers(text)]]
    loose += context.near_a_name(text)  # whatever the rules above left near a secret's name
    found += [SecretMatch(kind, a, b, text[a:b]) for kind, (a, b) in loose if taken.add(a, b)]
    # last: a sentence that gives a security answer none of them took
    found += [SecretMatch("security_answer", a, b, text[a:b]) for a, b in answers.answer_sentences(text) if taken.add(a, b)]
    kinds = {f.text: f.kind for f in found}
    for value, kind in list(kinds.items())[:MAX_REPEATED]:  # the same value again ("mine is 2718 right? yeah 2718")
        found += [SecretMatch(kind, a, a + len(value), value) for a in _occurrences(text, value) if taken.add(a, a + len(value))]
    return _whole_tokens(text, sorted(found, key=lambda s: s.start))


_TOKEN_CHAR = re.compile(r"[A-Za-z0-9+/_]")
LONG_KEY = 32


def _whole_tokens(text: str, found: list[SecretMatch]) -> list[SecretMatch]:
    """Each match grown to the whole run of key characters it was cut out of: a rule that took a
    middle piece (``K7MDENG`` of ``wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY``) must not leave the
    rest of the key in the text; matches that then meet are one."""
    out: list[SecretMatch] = []
    for f in found:
        start, end, kind = f.start, f.end, f.kind
        if (start > 0 and _TOKEN_CHAR.match(text[start - 1]) and _TOKEN_CHAR.match(text[start])) or (
            end < len(text) and _TOKEN_CHAR.match(text[end]) and _TOKEN_CHAR.match(text[end - 1])
        ):
            while start > 0 and _TOKEN_CHAR.match(text[start - 1]):
                start -= 1
            while end < len(text) and _TOKEN_CHAR.match(text[end]):
                end += 1
            kind = "api_key" if end - start >= LONG_KEY else kind  # a long run of key characters is a key
        if out and start < out[-1].end:
            last = out.pop()
            start, end, kind = min(start, last.start), max(end, last.end), last.kind
        out.append(SecretMatch(kind, start, end, text[start:end]))
    return out


MAX_REPEATED = 64
"""Distinct values looked for again elsewhere in the text: each is a pass over it, and a message
holds a handful of secrets (random text "holds" thousands; then the scan stays linear)."""


class _Taken:
    """The spans already matched, sorted: a new one is taken only where it overlaps none."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for a, b in sorted(spans):
            self.add(a, b)

    def add(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start)
        if (i > 0 and self.ends[i - 1] > start) or (i < len(self.starts) and self.starts[i] < end):
            return False
        self.starts.insert(i, start)
        self.ends.insert(i, end)
        return True

    def free_parts(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``start``–``end`` no taken span covers (not taken by this call)."""
        parts: list[tuple[int, int]] = []
        at = start
        first = max(0, bisect.bisect_right(self.starts, start) - 1)  # taken spans do not overlap: ends are sorted too
        for i in range(first, len(self.starts)):
            a, b = self.starts[i], self.ends[i]
            if a >= end:
                break
            if b <= at:
                continue
            if a > at:
                parts.append((at, a))
            at = max(at, b)
        return [*parts, (at, end)] if at < end else parts


def _occurrences(text: str, value: str) -> list[int]:
    """Where a found value stands again as a whole token (not inside a longer word or number)."""
    if len(value) < 4:
        return []
    edge = r"A-Za-z0-9" if value[0].isascii() and value[-1].isascii() else ""
    pattern = rf"(?<![{edge}])" + re.escape(value) + rf"(?![{edge}])" if edge else re.escape(value)
    return [m.start() for m in re.finditer(pattern, text)]


def redact_secrets(text: str) -> tuple[str, list[SecretMatch]]:
    """Replace each secret value with its typed placeholder; the words around it stay.

    Args:
        text: the text to clean (run it before PII redaction, so a key is removed whole).

    Returns:
        The redacted text and the matches that were replaced (offsets refer to the original text).
        Redacting the result again changes nothing.
    """
    matches = find_secrets(text)
    return replace_spans(text, [(m.start, m.end, PLACEHOLDERS[m.kind]) for m in matches]), matches


def message_without_secrets(message: dict[str, Any]) -> dict[str, Any]:
    """A client's chat message with every secret removed from its text (a string, or the text
    parts of a list, as the OpenAI API sends them); anything else about it unchanged."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": redact_secrets(content)[0]}
    if isinstance(content, list):
        parts = [
            {**p, "text": redact_secrets(p["text"])[0]} if isinstance(p, dict) and isinstance(p.get("text"), str) else p
            for p in content
        ]
        return {**message, "content": parts}
    return message


def secret_notice(text: str) -> str:
    """The sentence the reply adds when a secret was removed, in the language of ``text``.

    Args:
        text: the user's message.

    Returns:
        ``NOTICE_ZH`` if the text contains a Han character, else ``NOTICE_EN``.
    """
    return NOTICE_ZH if _HAN_RE.search(text) else NOTICE_EN


def storable(text: str, pii_redaction: bool = True) -> tuple[str, list[PiiMatch]]:
    """What tianma may store of a user's text: secrets always removed first — whatever the user
    asked (“记住我的密码…” too) and whatever the settings — then PII as
    :func:`tianma.guardrails.pii.scrub` decides.

    Returns:
        The text to store and the PII matches replaced (secret matches: :func:`find_secrets`).
    """
    return scrub(redact_secrets(text)[0], pii_redaction)
