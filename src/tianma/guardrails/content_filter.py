"""Reject candidate strategies and preferences that mock the user, are vulgar, or over-promise.

| reason | catches | passes |
|---|---|---|
| over_promise | 保证收益/一定能/包你/百分之百…/稳赚/绝对能/零风险/肯定能; guarantee(d)/100% sure/risk-free/definitely will/can't lose/sure-fire | the caution phrasing: 不保证、不能保证收益、并非零风险; no guarantee, cannot guarantee, never say risk-free |
| mocking | 嘲讽/挖苦/讽刺/取笑/阴阳怪气/骂/损…用户 (or 我, after 以后/要/请…); 说用户笨; mock/ridicule/make fun of/insult/belittle/roast the user; call the user stupid | 不要嘲讽用户; never mock the user |
| vulgar | a compact zh/en profanity lexicon: 傻逼/他妈的/操你/脑残/废物…; fuck/shit/bitch/asshole/cunt/retard… | Scunthorpe words: class, assess, assessment, Dickens, shiitake, Scunthorpe, 废物利用, 我操作 |

English profanity is matched whole-word with mild leetspeak (f*ck, sh1t, b!tch) and letter spacing
(f u c k, s.b); Chinese profanity tolerates separators between characters (傻 逼, 傻*逼).
A negation just before an over-promise or mocking phrase, inside the same clause, turns it into
the safe instruction it is; vulgarity is rejected regardless.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ContentVerdict:
    """Whether a candidate strategy or preference may be kept."""

    rejected: bool
    reason: str
    """``""``, ``"mocking"``, ``"vulgar"`` or ``"over_promise"``."""
    evidence: str
    """The matched fragment of the normalised text; "" when kept."""


_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")
_CLAUSE_END = re.compile(r"[,.;:!?\n，。；：！？]")
_NEGATION = re.compile(
    r"(?:不(?![仅但光错久少停断])|无法|没法|没有|没|不能|不可能|不敢|别|不要|避免|切勿|禁止|严禁|并非|不是|非(?!常)|勿)\s*\S{0,5}$"
    r"|\b(?:no|not|never|don't|dont|do not|cannot|can't|won't|without|avoid|stop|nothing is|isn't|aren't|shouldn't|must not|refrain from)\b(?:\s+\S+){0,4}\s*$"
)

# fmt: off
_OVER_PROMISE = re.compile(
    r"保证(?:能|会|你|收益|回报|赚|盈利|成功|效果|治愈|有效|通过|不亏|涨|一定|百分百|本金)|一定能|一定会(?:涨|赚|成功|好|治愈)|包你|包赚|包治"
    r"|(?:百分之百|100%)(?:能|会|成功|赚|有效|安全|治愈|保证|没问题|回本|盈利)|稳赚|稳赢|必赚|必涨|只赚不赔|保本保息"
    r"|绝对(?:能|会|不会|没问题|安全|有效)|零风险|无风险|肯定能"
    r"|\bguarantee[sd]?\b|\bguaranteeing\b|\b100 ?% (?:sure|certain|guaranteed|safe|success|returns?|profits?|effective|will|works?)"
    r"|\brisk[- ]free\b|\bzero risk\b|\bdefinitely will\b|\bwill definitely\b|\bcan(?:'t|not) lose\b|\bsure[- ]fire\b|\bsure thing\b"
)
_MOCKING = re.compile(
    r"(?:嘲讽|嘲笑|挖苦|讽刺|取笑|羞辱|侮辱|辱骂|骂|损|贬低|奚落|戏弄|揶揄|鄙视|笑话)(?:一下|一番)?(?:用户|提问者|对方)"
    r"|阴阳怪气|说(?:用户|提问者)(?:很|太|是|真)?(?:笨|蠢|傻|白痴|弱智|智障)"
    r"|(?:以后|每次|都要|要|请|多|经常|狠狠地?|使劲|可以|你|记得|应该|尽量|就|一定|务必|必须)[^,.;!?，。；！？]{0,4}?(?:嘲讽|嘲笑|挖苦|讽刺|取笑|羞辱|侮辱|辱骂|骂|损|贬低|奚落|揶揄|鄙视)(?:一下|一番)?我"
    r"|\b(?:mock|ridicule|make fun of|insult|belittle|roast|taunt|humiliate|demean|tease|sneer at|talk down to|condescend to|berate|trash[- ]talk)\s+(?:the\s+)?(?:users?|me|customers?|them)\b"
    r"|\bbe (?:sarcastic|condescending|rude|mean|snarky) (?:to|with|towards?) (?:the\s+)?(?:users?|me|customers?)\b"
    r"|\bcall (?:the users?|me|them|customers?) (?:an? )?(?:stupid|idiot|moron|dumb|fool|loser|retard)"
)
_ZH_VULGAR_WORDS = (
    "傻逼", "傻b", "傻比", "煞笔", "沙比", "他妈的", "操你", "草你", "肏", "滚蛋", "滚犊子", "脑残", "贱人",
    "婊子", "狗日", "王八蛋", "混蛋", "蠢货", "白痴", "弱智", "智障", "鸡巴", "狗东西", "贱货", "畜生", "卧槽",
    "草泥马", "你妈逼", "尼玛", "去你妈",
)
_EN_VULGAR_WORDS = (
    "fuck", "motherfucker", "shit", "bullshit", "bitch", "asshole", "dumbass", "jackass", "dick", "cunt",
    "retard", "bastard", "slut", "whore", "faggot", "nigger", "twat", "wanker", "douchebag",
)
_LEET = {"a": "a@4*", "e": "e3*", "i": "i1!*", "o": "o0*", "s": "s$5*", "t": "t7*", "u": "uv*", "g": "g9*"}
_EN_SUFFIX = r"(?:s|es|ed|er|ers|ing|in|y|ty|head|heads|face|hole)?"
# Standalone forms that need context to avoid Scunthorpe cases: 废物利用, 我操作, 去死海, 妈的 in 我妈的生日.
_ZH_VULGAR_EXTRA = (
    r"(?<!固体)(?<!危险)(?<!医疗)(?<!工业)(?<!生活)废物(?!利用|回收|处理|处置|排放|管理)"
    r"|我[操草](?!作|心|场|练|办|持|纵|盘|刀|稿|原|地|坪|莓|药)|去死(?!海)|(?<![我你她他咱俺])妈的(?![生工家电名手朋同病身照意])"
    r"|(?<![a-z0-9])(?:s[.*_-]?b|nmsl|cnm|tmd|mdzz|stfu)(?![a-z0-9])"
)
# fmt: on


def _en_word(word: str) -> str:
    first, rest = word[0], word[1:]
    compact = re.escape(first) + "".join(f"[{re.escape(_LEET.get(c, c + '*'))}]" for c in rest)
    spaced = r"[\s.\-_*]".join(re.escape(c) for c in word)
    return f"(?:{compact}|{spaced})"


def _zh_word(word: str) -> str:
    return r"[\s*.\-_]?".join(re.escape(c) for c in word)


_VULGAR = re.compile(
    "(?<![a-z])(?:" + "|".join(_en_word(w) for w in _EN_VULGAR_WORDS) + f"){_EN_SUFFIX}(?![a-z])"
    "|" + "|".join(_zh_word(w) for w in _ZH_VULGAR_WORDS) + "|" + _ZH_VULGAR_EXTRA
)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", _ZERO_WIDTH.sub("", text)).lower().replace("’", "'")


def _is_negated(text: str, start: int) -> bool:
    """Whether a negation sits just before ``start`` in the same clause (不保证 / cannot guarantee)."""
    before = text[:start]
    clause = before[max((m.end() for m in _CLAUSE_END.finditer(before)), default=0) :]
    return _NEGATION.search(clause[-48:]) is not None


def _first_unnegated(rx: re.Pattern[str], text: str) -> str:
    for m in rx.finditer(text):
        if not _is_negated(text, m.start()):
            return m.group()
    return ""


def check_candidate(text: str) -> ContentVerdict:
    """Check a candidate strategy or preference before it can become active.

    Args:
        text: the candidate, Chinese, English or mixed.

    Returns:
        A ``ContentVerdict``; vulgarity is checked first, then mocking, then over-promising.
    """
    norm = _normalise(text)
    if m := _VULGAR.search(norm):
        return ContentVerdict(True, "vulgar", m.group())
    if evidence := _first_unnegated(_MOCKING, norm):
        return ContentVerdict(True, "mocking", evidence)
    if evidence := _first_unnegated(_OVER_PROMISE, norm):
        return ContentVerdict(True, "over_promise", evidence)
    return ContentVerdict(False, "", "")
