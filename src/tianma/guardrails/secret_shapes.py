"""Secrets found by their shape or by a loose name nearby: what people type when they are not
filling in a form. Patterns and checks for :mod:`tianma.guardrails.secrets`, which ranks them
after its exact rules and :mod:`tianma.guardrails.secret_codes`.

| kind | matches | guard against false positives |
|---|---|---|
| password | credentials in a URL (``scheme://user:PASS@host``); a CLI password flag (``mysql -pX``, ``redis-cli -a X``, ``sshpass -p X``, ``zip -P X``); ``NAME_PASSWORD=X``/``…_SECRET=X``/``…_TOKEN=X``; a ``user / PASS`` or ``user:PASS`` pair after login/账号/credentials | a URL without a password; ``ssh -p 2222`` (a port) is no password flag; a placeholder (``<password>``, ``xxx``) |
| card_number | 13–19 digits (grouped 4-4-4-4, 4-6-5 or contiguous) that pass the Luhn check (16 or more when not grouped), or that follow a card's name (卡/card/visa/amex …) | an order, tracking or phone number: no card word and no valid checksum |
| api_key | a lone random string of ≥ 32 characters with capitals, small letters and digits (an AWS secret key, a base64 key) | hex (hashes, commit ids, UUIDs); a public key after ``ssh-rsa``/``ssh-ed25519`` or inside a certificate; URLs and paths; base64 that decodes to text (an encoded instruction, which the injection screen decodes) |
| access_code | a secret's name (密码/门禁/锁屏/储物柜/提取码/撤防码/PIN/code/keypad/combo/disarm/pass …) and, later in the same sentence, a value: 4–10 digits (``#`` allowed; 3 after CVV/CID) within 20 characters, or a token of letters with digits or symbols within 40 (e.g. "密码本来是身份证后六位 后来我改成了 xy@Lib2022"); one comma may come between when what follows says the new value (“换密码了，新的是…”); a quoted value after a code word or password; then every further code of that sentence (“ATM pin 6194, my checking 2281”); after backup/recovery codes (备用码/恢复码) every code on the lines that follow | no digits in the gap; a count, duration, price, year or room after the number (“8位”, “60秒”); promo, coupon, zip, area, error and tracking codes; a question (多少/什么/how/what) in the gap; plain words are never values here |
| seed_phrase | 12–24 lowercase words in a row when the message names a seed, recovery or backup phrase, a wallet or “12-word” anywhere | ordinary sentences have capitals, punctuation or short words |
| security_answer | 密保/安全问题 … 我设的/我填的/写的 X (across one comma); security question … I put/I used/I wrote X | question words |
"""

from __future__ import annotations

import base64
import re

from tianma.guardrails.pii import passes_luhn
from tianma.guardrails.secret_codes import ASCII_START, SP

# fmt: off
_SP, _A = SP, ASCII_START
_HAN = "\u3400-\u4dbf\u4e00-\u9fff"
_STOP_CLAUSE = "。！？!?；;\n"
_TOKEN_CHARS = r"A-Za-z0-9!@#$%^&*_.+=~?/\\-"

URL_CREDENTIALS = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s:/@]{0,64}:(?P<v>[^\s@/]{1,128})@[^\s@]")
CLI_PASSWORD = re.compile(
    r"(?:\b(?:mysql|mysqladmin|mysqldump|mariadb)\b[^\n]*?\s-p(?P<v1>[^\s-][^\s]*)"
    r"|\b(?:redis-cli)\b[^\n]*?\s-a\s+(?P<q2>['\"]?)(?P<v2>[^\s'\"]+)(?P=q2)"
    r"|\b(?:sshpass|7z|7za)\b[^\n]*?\s-p\s*(?P<q3>['\"]?)(?P<v3>[^\s'\"]+)(?P=q3)"
    r"|\bzip\b[^\n]*?\s-P\s+(?P<q4>['\"]?)(?P<v4>[^\s'\"]+)(?P=q4)"
    r"|(?<![A-Za-z0-9-])--(?:password|passwd|pass)[= ](?P<q5>['\"]?)(?P<v5>[^\s'\"]+)(?P=q5))"
)
ENV_SECRET = re.compile(
    r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API_KEY|APIKEY|PRIVATE_KEY)"
    r"[A-Z0-9_]*[ \t]*[=:][ \t]*(?P<q>['\"]?)(?P<v>[^\s'\"]{4,})(?P=q)"
)
CREDENTIAL_PAIR = re.compile(
    rf"(?:{_A}(?:login|log-in|sign-in|credentials?|username|user|account)(?![A-Za-z])|账号|帐号|用户名|登录|登陆)"
    rf"[^\n{_STOP_CLAUSE}]{{0,40}}?(?<![^\s:：,，(])(?P<user>[A-Za-z0-9_.@+-]{{2,40}})(?:{_SP}*[/|]{_SP}*|[:：](?!\s))"
    rf"(?P<v>[{_TOKEN_CHARS}]{{4,64}})(?![{_TOKEN_CHARS}])",
    re.IGNORECASE,
)
CARD_NUMBER = re.compile(
    r"(?<![0-9])(?P<v>[0-9]{4}(?:[ -][0-9]{4}){3}(?:[ -][0-9]{1,3})?|[0-9]{4}[ -][0-9]{6}[ -][0-9]{5}|[0-9]{13,19})(?![0-9])"
)
_CARD_WORD = re.compile(
    r"(?:卡|card|visa|master ?card|amex|american express|discover|unionpay|银联)[^\n]{0,24}$", re.IGNORECASE
)
STRONG_TOKEN = re.compile(
    r"(?<![A-Za-z0-9!@#$%^&*_.+=~?/\\:-])(?P<v>(?=[\w!@#$%^&*.+=~?-]{0,63}[A-Z])(?=[\w!@#$%^&*.+=~?-]{0,63}[a-z])"
    r"(?=[\w!@#$%^&*.+=~?-]{0,63}[0-9])(?=[\w!@#$%^&*.+=~?-]{0,63}[!@#$%^&*+=~?])"
    r"[A-Za-z0-9!@#$%^&*_.+=~?-]{8,64})(?![A-Za-z0-9!@#$%^&*_.+=~?/\\-])",
)
"""A lone token with capitals, small letters, digits and a symbol (``S7eam!grind2024``): a password
wherever it stands."""
DOTTED_WORDS = re.compile(r"(?<![\w@./:\\-])(?P<v>[A-Za-z]{3,}(?:\.[A-Za-z]{3,}){1,3}\.[0-9]{2,4})(?![\w@/:\\-]|\.\w)")
"""Words joined by dots with a number at the end (``Hunter.Moss.1987``, ``vinyl.junkie.42``): the
shape of a memorable password; a host, a file or a version ends in letters or has digit groups."""
WEBHOOK = re.compile(
    r"https?://(?:hooks\.slack\.com/services|(?:discord|discordapp)\.com/api/webhooks|[a-z0-9.-]*webhook\.office\.com)"
    r"/(?P<v>[A-Za-z0-9/_-]{16,})"
)
LONG_RANDOM = re.compile(r"(?<![A-Za-z0-9+/=_-])(?P<v>[A-Za-z0-9+/_-]{32,}={0,2})(?![A-Za-z0-9+/=_-])")
_PUBLIC_KEY_BEFORE = re.compile(r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-\S+|sha\d+|md5|hash|commit)\W*$", re.IGNORECASE)

_NAME_ZH = (
    r"密码(?!学)|口令|密碼|门禁|门锁|密码锁|智能锁|指纹锁|锁屏|解锁|开机|储物柜|保险柜|保险箱|提取码|取件码|撤防码|布防码|"
    r"验证码|动态码|校验码|备用码|恢复码|安全码|授权码|授权密码|应用专用密码|暗号|挂锁|"
    r"(?:背面|签名栏)[^，,。\s0-9]{0,6}?(?:三|3)(?:个|位)数?字?|[Pp][Ii][Nn]码?"
)
_NAME_EN = (
    rf"(?<![A-Za-z0-9_])(?i:passwords?|passwd|pass?wo?rd|passowrd|passwrod|pword|passcodes?|passkey|pass|pwd|pw|pins?|"
    rf"code{_SP}+word|codes?|combo|combination|keypad|disarm|passphrase|cvv2?|cvc2?|cvn|cid|secret|safe|lockbox|"
    rf"padlock|lock|door|gate|setup{_SP}+key|secret{_SP}+key)(?![A-Za-z_])"
)
_WEAK_NAME = r"后台|管理员|账号|帐号|登录|登陆|wifi|wi-fi|路由器|网关|admin|login|account|router"
"""Names that take a value of letters with digits or symbols, never a bare number."""
NAMED_VALUE = re.compile(
    rf"(?P<name>{_NAME_ZH}|{_NAME_EN}|(?i:{_WEAK_NAME}))"
    rf"(?P<gap>[^{_STOP_CLAUSE}，,0-9]{{0,40}}?(?:[，,]{_SP}*)?"
    rf"|[^{_STOP_CLAUSE}0-9]{{0,16}}?[，,]{_SP}*(?:[^{_STOP_CLAUSE}，,0-9]{{0,6}}?(?:新的|现在|改成|换成|改为|设成|变成)|就是|也就是|"
    rf"new one|now|(?:and{_SP}+)?(?:mine|it)(?:'s|{_SP}+is|{_SP}+was))[^{_STOP_CLAUSE}，,0-9]{{0,8}}?)"
    rf"(?:(?<![A-Za-z])(?P<quote>['\"“‘「])(?P<q>[^'\"”’」\n]{{2,40}})['\"”’」](?![A-Za-z])"
    rf"|(?<![\[({_TOKEN_CHARS}])[\[(]?(?P<v>[0-9](?: [0-9]){{3,7}}|[0-9]{{1,2}}(?:-[0-9]{{1,2}}){{2,3}}|\*?[0-9]{{3,10}}#?"
    rf"|(?=[A-Z2-7 ]{{0,39}}[0-9])[A-Z2-7]{{4}}(?: [A-Z2-7]{{4}}){{3,7}}(?![A-Za-z0-9])"  # a base32 setup key
    rf"|(?=[{_TOKEN_CHARS}]{{0,63}}[0-9!@#$%^&*+=~?])(?=[{_TOKEN_CHARS}]{{0,63}}[A-Za-z])[{_TOKEN_CHARS}]{{4,64}}"
    rf"|(?![A-Z]{{0,9}}[AEIOU][A-Z]{{0,9}}[AEIOU])[A-Z]{{5,10}}(?![A-Za-z])"  # RJKVQM: capitals, at most one vowel
    rf"|(?![a-z]{{0,40}}[aeiou][a-z]{{0,40}}[aeiou][a-z]{{0,40}}[aeiou])[a-z]{{12,40}}(?![A-Za-z])"  # random small letters
    rf"|(?!(?:[a-z ]{{0,19}}[aeiou]){{4}})[a-z]{{4}}(?: [a-z]{{4}}){{3}}(?![A-Za-z]))"  # app password
    rf"[\])]?(?![{_TOKEN_CHARS}]))",
)
MODEL = re.compile(r"(?:[A-Z]{1,4}-)?[A-Z]{1,4}[0-9]{2,6}[A-Z]{0,3}|[a-z][0-9]-[0-9]{4,5}[A-Z]{0,2}")
"""A product's model: capitals and digits (AX3000, RT-AX86U, WR841N, GTX1080), a CPU (i7-12700)."""
NOT_CODE_BEFORE = re.compile(
    r"(?:zip|postal|post|area|country|promo|promotion|discount|coupon|voucher|error|status|exit|source|qr|bar|"
    r"product|reference|confirmation|booking|tracking|order|flight|course|class|airport|colou?r|hex|dress|sort|"
    r"zone|region|invite|invitation|referral|gift|meeting|邮编|区号|优惠|折扣|兑换|错误|订单|快递|运单|航班|"
    r"邀请|会议|型号|model)[^A-Za-z]{0,2}$",
    re.IGNORECASE,
)
MEASURE = re.compile(
    r"[ \t]*(?:位|个|字|次|天|周|月|年|日|号|楼|层|室|分钟|小时|秒|元|块|岁|点|%|[- ]?(?:characters?|chars?|digits?|"
    r"letters?|numbers?|times?|tries|attempts?|seconds?|secs?|minutes?|mins?|hours?|days?|weeks?|months?|years?|"
    r"people|dollars?|usd|rmb|yuan|am|pm|km|kg|mb|gb)(?![A-Za-z]))",
    re.IGNORECASE,
)
_QUESTION_GAP = re.compile(
    r"多少|什么|啥|怎么|忘|哪|(?<![A-Za-z])(?:how|what|which|where|reset)(?![A-Za-z])|(?<![A-Za-z])forg[eo]t", re.IGNORECASE
)
_NOTED_AFTER = re.compile(r"记一下|记下|记住|记着|帮我记|存一下|(?:write|note) (?:it|this) down|remember", re.IGNORECASE)
"""After a question word in the gap, what says the value follows anyway: 支付密码老忘 记一下 741852."""
_NAME_OF = re.compile(r"名字|名称|叫做?|网络名|(?<![A-Za-z])(?:ssid|name[ds]?|called)(?![A-Za-z])", re.IGNORECASE)
_RANDOM_LETTERS = re.compile(r"[A-Z]{5,10}|(?![a-z]{0,40}[aeiou][a-z]{0,40}[aeiou][a-z]{0,40}[aeiou])[a-z]{12,40}|[a-z]{4}(?: [a-z]{4}){3}")
"""Letters only and still a code: capitals (KXPLMN), a long run with at most two vowels, an app password."""
_DETERMINER = re.compile(r"^(?:the|a|an|my|your|his|her|our|their|same|usual|that|this)\b", re.IGNORECASE)
_CODE_LIST_NAME = re.compile(
    rf"备用码|恢复码|备份码|{_A}(?:backup|recovery|rescue|2fa|mfa|one-time)(?:{_SP}+\w+)?{_SP}+codes(?![A-Za-z])",
    re.IGNORECASE,
)
_LISTED_CODE = re.compile(
    r"(?<![A-Za-z0-9])(?P<v>[0-9]{4,5}[ -][0-9]{4,5}|[A-Za-z0-9]{3,6}(?:-[A-Za-z0-9]{3,6})+|[0-9]{6,10})(?![A-Za-z0-9])"
)
_BARE_NUMBER = re.compile(r"(?<![0-9A-Za-z.:/-])(?P<v>[0-9]{4,8}#?)(?![0-9A-Za-z.:/-])")

SEED_CUE = re.compile(
    r"助记词|恢复短语|钱包|(?<![A-Za-z])(?:seed|recovery|backup|secret|mnemonic|wallet|ledger|trezor|metamask)(?![A-Za-z])"
    r"|(?:12|24|twelve|twenty-four)[- ]words?",
    re.IGNORECASE,
)
SEED_RUN = re.compile(r"(?<![A-Za-z])(?P<v>[a-z]{3,8}(?:[ ,]+[a-z]{3,8}){11,23})(?![A-Za-z])")

SECURITY_ANSWER = re.compile(
    rf"(?:(?:密保|安全问题|密码提示)[^{_STOP_CLAUSE}]{{0,24}}?(?:我设的|我填的|我写的|设的|填的|写的|答的|设置的)(?:是)?{_SP}*"
    rf"|{_A}security{_SP}+question[^{_STOP_CLAUSE}]{{0,60}}?{_A}(?:I|i){_SP}+(?:put|used|wrote|typed|said|set|answered)"
    rf"(?:{_SP}+(?:it{_SP}+as|in|down))?{_SP}+"
    rf"|{_A}security{_SP}+(?:question{_SP}+)?answers?(?![A-Za-z])[^{_STOP_CLAUSE}=:：]{{0,40}}?[=:：]{_SP}*)"
    rf"(?:['\"“](?P<q>[^'\"”\n]{{1,40}})['\"”]|(?P<v>[{_HAN}]{{1,6}}|[A-Z][A-Za-z.'’-]*(?:{_SP}+[A-Z][A-Za-z'’-]*){{0,2}}|[A-Za-z0-9_-]{{2,30}}))",
)
_ANSWERS_NAME = re.compile(r"(?<![A-Za-z])security\s+(?:question\s+)?answers(?![A-Za-z])|密保答案", re.IGNORECASE)
_KEY_AFTER = re.compile(r"[ \t]*[,，;；]?[ \t]*(?:the[ \t]+)?(?:key|pass(?:word|key)?|pw|pwd|密码|密钥|口令)(?![A-Za-z])", re.IGNORECASE)
"""After a network's name: its key or password is given next."""
_QUOTED = re.compile(r"['\"“‘「](?P<q>[^'\"”’」\n]{1,40})['\"”’」]")
# fmt: on


def _shape_ok(value: str) -> bool:
    """A value of a loosely named secret: digits, or letters with a digit or a symbol."""
    bare = value.rstrip("#")
    if bare.isdigit():
        return True
    has_alpha = any(ch.isalpha() for ch in value)
    has_other = any(ch.isdigit() or ch in "!@#$%^&*+=~?" for ch in value)
    if not (has_alpha and has_other) or len(set(value.lower())) < 3:
        return False
    if re.fullmatch(r"[A-Za-z]+[.][A-Za-z]{2,4}|v?[0-9]+(?:\.[0-9]+)+|[0-9.]+|https?:.*|www\..*", value):
        return False  # a file name, a version, an IP address, a link
    if re.fullmatch(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}", value):
        return False  # an e-mail address
    if re.fullmatch(r"[0-9]{1,2}[A-Z][a-z]+", value):
        return False  # a brand: 1Password, 7Eleven
    return not re.search(r"<[^>]*>|\{[^}]*\}|[xX*]{3,}|\.{3}|example|placeholder|your|here$", value, re.IGNORECASE)


def named_value_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The value after a secret's name, unless the name is of something else or the value is a
    count, a price, a date or a word."""
    gap, name = m.group("gap"), m.group("name")
    if re.search(r"==|!=|[()]|(?<![A-Za-z])(?:if|return|def|not)(?![A-Za-z])", gap):
        return None  # code comparing or passing a password, not a value
    if re.search(r"型号|(?<![A-Za-z])(?i:model|like|such as|e\.g\.)(?![A-Za-z])|比如|例如", gap) or (
        name.lower() == "pass" and re.match(r"\s+(?i:at|on|in|with|through|by|the)\b", gap)
    ):
        return None  # a safe's model, examples of weak passwords, "tests pass at a1b2c3d"
    if _asks(gap) or NOT_CODE_BEFORE.search(text[max(0, m.start() - 16) : m.start()]):
        return None
    weak = re.fullmatch(rf"(?i:{_WEAK_NAME})", name) is not None
    if weak and _NAME_OF.search(gap):
        return None  # WiFi名字叫 TP-LINK_5G_3A2F: the network's name, not its password
    if m.group("q") is not None:  # a quoted value: only after a password or a code word
        value = m.group("q")
        strong = re.search(r"密码|口令|暗号|pass|code\s+word|secret", name, re.IGNORECASE)
        if _DETERMINER.match(value) or len(gap) > 24:
            return None
        if not strong:  # 授权码「xvbnqplkzrtwdmhe」: after another name only a random value
            return (m.start("q"), m.end("q")) if not weak and _RANDOM_LETTERS.fullmatch(value) else None
        phrase = re.search(r"暗号|code\s+word|passphrase", name, re.IGNORECASE) is not None
        if not (_shape_ok(value) or (phrase and any(ch.isalpha() for ch in value))):
            return None  # 密码“就是那个”, input("Password: "): a description or code, not a password
        return m.start("q"), m.end("q")
    start, end = m.start("v"), m.end("v")
    value = text[start:end].rstrip(".,;:?!/\\-")
    if value.startswith("@") or (name.lower() == "gate" and re.fullmatch(r"[A-Z]{1,2}[0-9]{1,3}", value)):
        return None  # a host (<password>@localhost), an airport gate (G98)
    end = start + len(value)
    if weak and _KEY_AFTER.match(text, end):
        return None  # "wifi: HomeNet5G, key is …": the network's name, its key follows
    if re.fullmatch(r"[a-z ]+|[A-Z]+", value):  # random letters, in the shapes the regex allows
        return (start, end) if _RANDOM_LETTERS.fullmatch(value) and not weak else None
    if re.fullmatch(r"(?!(?i:pass|pwd|pw|key|token|secret|pin|code))[A-Za-z_]{1,12}=.*|[0-9]+-[A-Za-z]+|[A-Za-z_-]+=", value):
        return None  # p=61, ip=10.0.0.5: a field of a log or a form; 10-person: a measure; type=: a name
    if re.fullmatch(r"[0-9](?: [0-9]){3,7}|[0-9]{1,2}(?:-[0-9]{1,2}){2,3}", value):
        return None if weak or _QUESTION_GAP.search(gap) else (start, end)
    value = value.lstrip("*")
    start = end - len(value)
    if not value or not _shape_ok(value):
        return None
    digits = value.rstrip("#").isdigit()
    if digits:
        short_ok = re.fullmatch(r"(?i:cvv2?|cvc2?|cvn|cid|安全码|背面.*|签名栏.*)", name) is not None or (
            re.fullmatch(r"(?i:密码|密碼|口令|挂锁|密码锁|combo|combination|padlock|lockbox)", name) is not None
            and re.match(r"[ \t]*(?:$|[，,。.!！;；\n])", text[end:]) is not None
        )  # a padlock's three digits, ending the clause (盒子密码 862)
        if weak or len(gap) > 24 or (len(value.rstrip("#")) < 4 and not short_ok) or MEASURE.match(text, end):
            return None
        if re.fullmatch(r"(?:19|20)[0-9]{2}", value) and re.match(r"\s*(?:年|-|/)", text[end:]):
            return None  # a year
    elif re.fullmatch(r"[A-Za-z]+", value.rstrip("#")) or (weak and MODEL.fullmatch(value)):
        return None  # a word; after a router's or a laptop's name, its model (AX3000, RT-AX86U, i7-12700)
    return start, end


def _asks(gap: str) -> bool:
    """A question or a forgotten value in the gap, and nothing after it saying the value follows."""
    asked = list(_QUESTION_GAP.finditer(gap))
    return bool(asked) and not _NOTED_AFTER.search(gap, asked[-1].end())


def sibling_numbers(text: str, found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Further bare codes in the sentence of a code already found (“ATM pin 6194, my checking 2281”)."""
    spans: list[tuple[int, int]] = []
    scanned = 0  # each stretch of text is scanned once, however many codes a sentence holds
    for start, end in sorted(found):
        if end < scanned or not text[start:end].rstrip("#").isdigit():
            continue
        stop = min((i for i in (text.find(c, end) for c in _STOP_CLAUSE) if i >= 0), default=len(text))
        begin, scanned = max(end, scanned), stop
        for m in _BARE_NUMBER.finditer(text, begin, stop):
            if not MEASURE.match(text, m.end()) and not NOT_CODE_BEFORE.search(text[max(0, m.start() - 16) : m.start()]):
                spans.append((m.start("v"), m.end("v")))
    return spans


def quoted_answers(text: str) -> list[tuple[int, int]]:
    """Every quoted answer on the line after “security answers” (“Q1 dream car: 'Chevy Malibu', …”)."""
    spans: list[tuple[int, int]] = []
    for name in _ANSWERS_NAME.finditer(text):
        line_end = text.find("\n", name.end())
        for m in _QUOTED.finditer(text, name.end(), len(text) if line_end < 0 else line_end):
            if not re.search(r"什么|啥|谁|哪|吗|\?|？", m.group("q")):
                spans.append((m.start("q"), m.end("q")))
    return spans


def listed_codes(text: str) -> list[tuple[int, int]]:
    """Every code on the lines after a name of backup or recovery codes (up to 16 lines)."""
    spans: list[tuple[int, int]] = []
    for name in _CODE_LIST_NAME.finditer(text):
        if _QUESTION_GAP.search(text[name.end() : name.end() + 12]):
            continue
        lines = text[name.end() :].split("\n")
        offset = name.end()
        for line in lines[:17]:
            for m in _LISTED_CODE.finditer(line):
                if not MEASURE.match(line, m.end()):
                    spans.append((offset + m.start("v"), offset + m.end("v")))
            offset += len(line) + 1
    return spans


def value_group(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The first value group that took part in the match."""
    for name in ("v", "v1", "v2", "v3", "v4", "v5"):
        if name in m.re.groupindex and m.group(name) is not None:
            value = m.group(name)
            if _shape_ok(value) or (value.isalpha() and len(value) >= 4 and name != "v"):
                return m.start(name), m.end(name)
            lenient = m.re is URL_CREDENTIALS or m.re is ENV_SECRET
            return (m.start(name), m.end(name)) if lenient and _shape_ok(value + "0") else None
    return None


def credential_pair_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The password of a ``user / password`` pair: it has a digit or a symbol; the user has none of ``://``."""
    value = m.group("v")
    if "://" in text[m.start("user") : m.end("v") + 3] or not _shape_ok(value) or value.isdigit():
        return None
    return m.start("v"), m.end("v")


def card_number_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """A payment card: a valid checksum, or a card's name just before it."""
    digits = re.sub(r"[ -]", "", m.group("v"))
    checksum = passes_luhn(digits) and (len(digits) >= 16 or digits != m.group("v"))  # 13–15 in a row: an order number too
    if checksum or _CARD_WORD.search(text[max(0, m.start() - 40) : m.start()]):
        return m.start("v"), m.end("v")
    return None


def _in_public_block(text: str, at: int) -> bool:
    """Inside a PEM block that is not a private key (a certificate, a public key)."""
    begin = text.rfind("-----BEGIN ", 0, at)
    if begin < 0 or text.find("-----END ", begin, at) >= 0:
        return False
    return "PRIVATE" not in text[begin : text.find("-----", begin + 11)]


def strong_token_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """A password-shaped token that is no link, e-mail address, path or code."""
    value = m.group("v").rstrip(".,;:?!")
    if _in_public_block(text, m.start()) or not _shape_ok(value) or "://" in value or re.search(r"[(){}\[\]<>]|==|&&|\|\|", value):
        return None
    if re.match(r"\$(?:2[abxy]?|[156]|argon2\w*|scrypt|pbkdf2[\w-]*)\$", value):
        return None  # a password hash (bcrypt, crypt, argon2): what is stored instead of a password
    return m.start("v"), m.start("v") + len(value)


def long_random_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """A long string of capitals, small letters and digits that no word, hash or public key is."""
    value = m.group("v").rstrip("=")
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)):
        return None
    if _in_public_block(text, m.start()):
        return None
    if re.fullmatch(r"(?:0x)?[0-9a-fA-F-]+", value) or _PUBLIC_KEY_BEFORE.search(text[max(0, m.start() - 24) : m.start()]):
        return None
    if re.search(r"\$(?:2[abxy]?|[156]|argon2\w*)\$(?:[^$\s]*\$)?$", text[max(0, m.start() - 40) : m.start()]):
        return None  # the digest of a password hash
    if value.count("/") > 2 or len(set(value)) < 16:
        return None  # a path, or a repetitive string
    if _encoded_text(m.group("v")):
        return None  # base64 of words (the injection screen reads it), not a key
    return m.start("v"), m.end("v")


def _encoded_text(value: str) -> bool:
    """Whether a base64 string decodes to readable text with spaces: a key decodes to noise."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_" if "-" in value or "_" in value else None)
        decoded = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    words = decoded.split()
    letters = sum(ch.isalpha() or ch.isspace() for ch in decoded)
    han = sum("\u4e00" <= ch <= "\u9fff" for ch in decoded)
    readable = letters >= 0.8 * len(decoded) and all(ch.isprintable() or ch.isspace() for ch in decoded)
    return readable and (len(words) >= 4 or han >= 6)


def seed_run_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """A run of lowercase words (or a numbered list of them) is a recovery phrase only when one is
    named near it."""
    near = text[max(0, m.start() - 200) : m.end() + 100]
    return (m.start("v"), m.end("v")) if SEED_CUE.search(near) else None


def security_answer_check(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The answer given to a security question, not a question word."""
    name = "q" if m.group("q") is not None else "v"
    value = m.group(name)
    if re.search(r"什么|啥|谁|哪|吗|忘|^(?:what|who|the|a|it|my|not)$", value, re.IGNORECASE):
        return None
    if re.search(r"忘|不记得|记不清|forgot|forget|don't remember", m.group()):
        return None
    return m.start(name), m.end(name)
