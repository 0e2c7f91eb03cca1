"""Passwords said in Chinese characters (“wifi密码是天王盖地虎”, “门锁密码是六个八”, “密码其实是一句歌词：
两只老虎跑得快”): the exact rules of :mod:`tianma.guardrails.secrets` take a value that is not Han
(a value stops at the first Han character), so a password of Han characters was kept. A pass
run after the exact rules, on what they left.

| matches | guard against false positives |
|---|---|
| 密码/口令/暗号/提取码 + a connector (是, 为, 就是, 改成, 我换成了, 设的, ：, =, also after 其实/就/也/还/现在), a short aside and a colon (“密码其实是一句歌词：…”), or only a space or a quote; then a run of 2–24 Han characters (digits and letters allowed inside, at least two Han) up to the end of the clause | a password no one owns (no 我, 家, wifi, 邮箱, 锁, 记, 别发 … in the 30 characters before its name or after the value) or a saying (“成功的密码是坚持”, “长寿的密码：…”); talk about a password, not one: a run that opens with a word of talk (什么, 多少, 对, 错, 不, 忘, 一样, 很, 简单, 默认, 我 — “我生日” is a hint —, 这, 在 …), that holds a description (数字, 字母, 大小写, 位数, 生日, 名字, 手机号 …) or says where it is or what was done with it (贴在, 写在, 输错, 路由器背面 …), that ends as talk (的, 了, 吗, 呢, 吧, 啊 …) or counts characters (六位, 八个字); a clause that asks (？, 吗) |

Chinese number words (七三九一五八) are digits to the exact rules already (:func:`~tianma.
guardrails.secrets.find_secrets` makes them plain first); “六个八” is such a value in words.
"""

from __future__ import annotations

import re

Span = tuple[int, int]

_H = "\u3400-\u4dbf\u4e00-\u9fff"
_NAME = r"(?:密码|口令|暗号|密碼|提取码|解压码|(?<![A-Za-z])(?i:password|passcode)(?![A-Za-z]))"
_CONNECT = (
    r"(?:其实|就|也|还|现在|目前|已经|都|一直)?(?:被?我|我们|他|她)?(?:已经)?"
    r"(?:就是|是|为|為|改成了?|改为|设成了?|设为|换成了?|变成了?|设置成了?|设置为|设的是?|用的是|[:：=])"
)
_ASIDE = r"[^。.！!？?；;\n：:]{1,16}[:：]"
_BARE = r"(?:[ \t\u3000]+|(?=[“\"「]))"
_VALUE = rf"[“\"「'‘]?(?P<v>[{_H}0-9A-Za-z]{{2,24}})"
LEADS = tuple(re.compile(rf"{_NAME}{lead}{_VALUE}") for lead in (rf"\s*{_CONNECT}\s*", rf"\s*{_ASIDE}\s*", _BARE))
"""A password named, then a connector, an aside and a colon, or only a space or a quote; then a
run that may be its value."""
_SAYING = re.compile(
    r"(?:长寿|成功|幸福|财富|健康|快乐|减肥|年轻|美丽|赚钱|致富|发财|婚姻|爱情|人生|生命|基因|宇宙|自然|流量|爆款|增长|涨粉|逆袭"
    r"|学霸|高分|养生|长命|好运|美味|好吃)的?$"
)
"""“长寿的密码：…”, “财富密码”: a saying, not a password."""
_PARTICLES = re.compile(r"[了啦哦呀哈嘛]+$")
"""Said after a value (“改成宝宝睡觉觉了”): not part of it."""

_TALK_START = re.compile(
    r"(?:什么|多少|啥|哪|几|怎|如何|为什么|是|该|对|错|不|没|别|忘|记不|一样|相同|同一|同样|很|太|挺|比较|非常|特别|超|简单|复杂"
    r"|默认|初始|原来|原先|以前|之前|刚|我|你|您|他|她|它|咱|俺|这|那|各|每|所有|全|纯|由|用|在|从|要|需|必须|应该|可以|能|会"
    r"|被|给|让|把|已|又|也|还|就|都|只|有|无|空|正确|安全|一句|一个|一串|一段|一组|一本|一部|一种|个|明文|加密|公司|统一"
    r"|系统|管理员|随机|临时|动态|区分|包含|带|含|按|跟|和|与|及|或|等)"
)
"""A run that opens with a word of talk about the password (“密码是对的”, “密码是我生日”)."""
_DESCRIBES = re.compile(
    r"数字|字母|符号|字符|大小写|位数|生日|名字|姓名|拼音|手机号|电话|身份证|学号|工号|车牌|门牌|缩写|首字母|英文|中文|汉字|"
    r"密码|口令|一样|相同|不同|什么|多少|怎么|设置|修改|重置|过期|失效|错误|正确|忘记|记得|知道|告诉|发给|短信|邮件|验证"
)
"""A run that describes a password or how it is set rather than giving it."""
_WHERE = re.compile(
    r"在|写|贴|输|问|发(?:你|给|到|过)|放|存|改|换|设|查|试|登|那串|这串|那个|这个|背面|背后|标签|本子|路由|冰箱|上面|下面|底下|里面|同上"
)
"""A run that says where the password is or what was done with it (“wifi密码 贴在冰箱上”, “密码
输错三次了”, “见路由器背面标签”), not the password."""
_TALK_END = re.compile(r"(?:的|了|吗|呢|吧|啊|呀|哦|嘛|啦|么|过|着|得)$")
_COUNT = re.compile(r"^[零一二两三四五六七八九十百]+(?:位|个(?:字|数|符|字母|汉字)|字|种)")
"""“六位数字”, “八个字”: how long a password is, not the password (“六个八” is one)."""
OWNER_NEAR = 30
"""Characters before the password's name and after its value in which :data:`_OWNED` is looked for."""
_HAN_RUN = re.compile(f"[{_H}]")
_ASKS = re.compile(r"[?？]|吗|呢|什么|啥|多少|怎么|([是有能要该会对行好])不\1")
"""A clause that asks (also 是不是, 能不能 …): no value is given in it."""
_OWNED = re.compile(
    r"我|咱|俺|家|记|存|帮|保密|别(?:发|告诉|外传|传|说)|wi-?fi|路由|邮箱|账号|帐号|账户|手机|电脑|开机|锁|屏|门|保险|支付"
    r"|银行|卡|登录|登陆|app|网|群|柜|qq|微信|淘宝|支付宝|钉钉|游戏|云盘|网盘|压缩|解压|系统|平板|pad|phone|mac|windows|宿舍|公会|频道",
    re.IGNORECASE,
)
"""Someone's own password, or one to keep: “成功的密码是坚持” is a saying, not a password."""
_CLAUSE = re.compile(r"[，,。！!？?；;\n]")
CLAUSE_REACH = 80


def han_passwords(text: str) -> list[Span]:
    """Spans of the passwords of Han characters ``text`` gives (module text)."""
    out: list[Span] = []
    for m in (m for lead in LEADS for m in lead.finditer(text)):
        if _SAYING.search(text, max(0, m.start() - 4), m.start()):
            continue
        start, end = m.span("v")
        end -= len(particles.group()) if (particles := _PARTICLES.search(m.group("v"))) else 0
        value = text[start:end]
        if len(_HAN_RUN.findall(value)) < 2 or _talk(value):
            continue
        if _ASKS.search(_clause(text, m.start(), end)):
            continue
        if not _OWNED.search(text[max(0, m.start() - OWNER_NEAR) : m.start()] + " " + text[end : end + OWNER_NEAR]):
            continue
        out.append((start, end))
    return sorted(set(out))


def _talk(value: str) -> bool:
    return bool(_TALK_START.match(value) or _DESCRIBES.search(value) or _TALK_END.search(value) or _COUNT.match(value)
                or _WHERE.search(value))


def _clause(text: str, start: int, end: int) -> str:
    """The clause around ``start``–``end``: from the last clause mark before it to the next after,
    at most :data:`CLAUSE_REACH` characters either side."""
    before = max((m.end() for m in _CLAUSE.finditer(text, max(0, start - CLAUSE_REACH), start)),
                 default=max(0, start - CLAUSE_REACH))  # fmt: skip
    after = _CLAUSE.search(text, end, end + CLAUSE_REACH)
    return text[before : after.start() if after else min(len(text), end + CLAUSE_REACH)]
