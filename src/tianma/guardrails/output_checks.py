"""Built-in output checks for ``redline_check``: pure functions over the reply text.

Each check returns a :class:`Finding` or ``None`` and never raises. ``amend`` findings append a
bilingual note to the reply; ``block`` findings replace it. Lexicons are small on purpose: a
miss is cheaper to explain and fix than a false alarm on ordinary replies.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Severity = Literal["amend", "block"]
Outcome = Literal["pass", "amended", "blocked"]

FINANCE_NOTE = (
    "⚠️ 风险提示：投资有风险，以上不构成收益承诺或投资建议。"
    "/ Risk note: investments carry risk; this is not a promise of returns or financial advice."
)
MEDICAL_NOTE = (
    "⚕️ 请遵医嘱或咨询医生/药师，以上剂量仅供参考。"
    "/ Please follow your doctor's or pharmacist's advice; doses above are for reference only."
)
LEAK_NOTE = "抱歉，这个回答涉及其他人的信息，已被拦截。/ Sorry, that answer touched someone else's information and was withheld."
HARM_NOTE = (
    "抱歉，这个内容可能造成严重伤害，我不能提供。/ Sorry, I can't provide that; it could cause serious harm."
)
SELF_HARM_NOTE = (
    "我很在意你的安全。如果你正处在危险中，请立即联系当地急救电话或心理援助热线。"
    "/ I care about your safety. If you are in danger, please contact local emergency services or a crisis line."
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One triggered check: what fired, how severe, the note to use and the triggering text."""

    check: str
    severity: Severity
    note: str
    evidence: str


_NUM = r"(?:\d+(?:\.\d+)?|[零一二两三四五六七八九十百半]+)"
_NEGATION = re.compile(
    r"不|没|无法|并非|绝非|别|未必|拒绝|假装|\b(?:no|not|never|nothing|none|nobody|cannot|pretend)\b|n['’]t\b",
    re.I,
)
_CLAUSE_BREAK = re.compile(r"[，。,.;；:：!！?？\n]")
_SENTENCE_BREAK = re.compile(r"[。！？!?\n]|\.(?:\s|$)")

_FIN_CONTEXT = re.compile(
    r"收益|回报|涨|基金|股票|股价|理财|投资|年化|赚|比特币|\b(?:returns?|stocks?|funds?|invest\w*|shares?|crypto|bitcoin|portfolio)\b",
    re.I,
)
_FIN_CERTAIN = re.compile(
    r"保证(?:能|会)?(?:涨|赚|翻倍|收益|回报|盈利)|一定(?:能|会)?(?:涨|赚|翻倍|盈利)|稳赚|包赚|保本保息|零风险"
    r"|肯定(?:会|能)?(?:涨|赚|翻倍)|年化(?:收益率?)?(?:能|会|可以)?(?:达到|稳定在)?\s*\d+(?:\.\d+)?\s*[%％]"
    r"|明年(?:能|会)?涨\s*\d+(?:\.\d+)?\s*[%％]"
    r"|\bguaranteed? (?:an? )?(?:\d+(?:\.\d+)?\s?% )?(?:returns?|profits?|gains?)\b"
    r"|\bwill definitely (?:rise|go up|double|increase|gain)\b|\bcan(?:no|'|’)t lose\b|\brisk[- ]free\b(?! rate)"
    r"|\bwill (?:return|yield|earn|gain) \d+(?:\.\d+)?\s?%|\bexpect(?:ed)? (?:an? )?\d+(?:\.\d+)?\s?% (?:\w+ )?(?:returns?|gains?)\b",
    re.I,
)
_FIN_SAFE = re.compile(
    r"风险提示|投资有风险|不构成(?:任何)?(?:投资)?建议|\b(?:not|isn't) (?:financial|investment) advice\b|\bcarr(?:y|ies) risks?\b",
    re.I,
)

_DRUG = re.compile(
    r"药|布洛芬|阿司匹林|对乙酰氨基酚|扑热息痛|抗生素|阿莫西林|剂量|服用|用量"
    r"|\b(?:ibuprofen|aspirin|acetaminophen|paracetamol|tylenol|advil|antibiotics?|amoxicillin|doses?|dosage|medications?|medicines?|drugs?)\b",
    re.I,
)
_FOOD = r"(?!面包|饼干|西瓜|肉|叶|蛋|鸡蛋|糖|巧克力|水果|苹果|吐司)"
_DOSE_STRONG = re.compile(
    rf"{_NUM}\s*(?:毫克|微克|片{_FOOD}|粒{_FOOD}|胶囊|滴)|\d+(?:\.\d+)?\s*(?:mg|mcg|µg|iu)\b"
    r"|\b(?:\d+|one|two|three|four|five)\s*(?:tablets?|pills?|capsules?|drops?)\b",
    re.I,
)
_DOSE_WEAK = re.compile(
    rf"{_NUM}\s*(?:克(?!服)|毫升|颗)|(?:每|一)(?:天|日|晚)\s*{_NUM}\s*次|\d+(?:\.\d+)?\s*(?:g|ml)\b"
    r"|\b(?:\d+|once|twice|one|two|three|four) times? (?:a|per) day\b|\bevery \d+ (?:hours?|hrs?)\b",
    re.I,
)
_MED_SAFE = re.compile(
    r"遵医嘱|咨询医生|请咨询|药师|说明书|\bconsult (?:a|your) (?:doctor|physician|pharmacist)\b|\bpharmacist\b"
    r"|\bmedical advice\b|\bfollow the (?:label|package)\b",
    re.I,
)

_OTHER_AI = r"(?:ChatGPT|GPT-?\d[\w.]*|DAN|Claude|Gemini|Bard|文心一言|通义千问|豆包|Kimi)(?![A-Za-z的])"
_UNLIMITED = re.compile(
    rf"我(?:现在|其实|已经)?(?:是|叫|变成了?|成为了?)\s*{_OTHER_AI}"
    r"|我(?:现在|其实|已经)?(?:是|变成了?|成为了?)(?:一个|一名)?(?:全能|万能|无所不能|没有(?:任何)?限制|不受(?:任何)?限制|无限制|不受约束)"
    r"|我(?:现在|已经)?(?:没有|不再有|不受)(?:任何)?(?:限制|约束|规则)(?![你您])"
    r"|作为(?:一个)?(?:没有(?:任何)?限制|不受(?:任何)?限制|无限制|全能)的?(?:AI|人工智能|助手|模型)"
    rf"|\bI(?:'m|’m| am)(?: now| actually)? {_OTHER_AI}"
    r"|\bI(?:'m|’m| am)(?: now| actually)? (?:an? )?(?:all[- ]powerful|omnipotent|unrestricted|unfiltered|unlimited|jailbroken|uncensored)\b"
    r"|\bas an? (?:unrestricted|unfiltered|jailbroken|uncensored|all[- ]powerful) (?:AI|assistant|model|chatbot)\b"
    r"|\bI(?: now)? (?:have|'ve got) no (?:restrictions|limits|limitations|rules|filters|guidelines)\b"
    r"|\bI no longer have any (?:restrictions|limits|limitations|rules|filters|guidelines)\b",
    re.I,
)

_WEAPON = r"(?:炸药|炸弹|雷管|爆炸物|燃烧弹|硝化甘油)"
_DRUGS = r"(?:冰毒|甲基苯丙胺|海洛因|可卡因|摇头丸|芬太尼)"
_MAKE = r"(?:制作|制造|自制|组装|配制|合成|提炼|提纯)"
_HARM = re.compile(
    rf"{_WEAPON}[^。\n]{{0,10}}(?:制作|制造|配方|做法|配比|步骤|组装)|{_MAKE}[^。\n]{{0,6}}(?:{_WEAPON}|{_DRUGS})"
    rf"|{_DRUGS}[^。\n]{{0,10}}(?:合成|提炼|制作|制造|配方|提纯)|制毒"
    r"|\b(?:make|making|build|building|assemble|assembling)\s+(?:an?\s+)?(?:pipe\s+)?(?:bombs?|explosives?|ieds?|detonators?|molotov)\b"
    r"|\b(?:synthesi[sz]e|synthesi[sz]ing|cook|cooking|make|making|manufactur(?:e|ing))\s+(?:meth|methamphetamine|heroin|fentanyl|cocaine)\b",
    re.I,
)
_SELF_HARM = re.compile(
    r"自杀(?:的)?(?:方法|方式|办法)|(?:怎么|如何|怎样)自杀|无痛(?:的)?自杀|割腕(?:的)?(?:方法|步骤)|上吊(?:的)?(?:方法|步骤)"
    r"|\b(?:how|ways?) to (?:kill yourself|commit suicide|end your life)\b|\bpainless (?:ways?|methods?) to die\b"
    r"|\b(?:best|easiest) way to (?:kill yourself|die)\b",
    re.I,
)
_REFUSAL = re.compile(
    r"不能|无法|不会提供|不提供|拒绝|违法|犯罪|热线|心理援助|急救"
    r"|\b(?:can't|can’t|cannot|won't|won’t|unable|not able|refuse|illegal|hotline|crisis|lifeline)\b",
    re.I,
)


def _negated(text: str, start: int) -> bool:
    """Whether the clause just before ``start`` negates or disowns what follows."""
    clause = _CLAUSE_BREAK.split(text[max(0, start - 24) : start])[-1]
    return bool(_NEGATION.search(clause))


def _first_claim(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``text`` that the preceding words do not negate."""
    return next((m for m in pattern.finditer(text) if not _negated(text, m.start())), None)


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around ``[start, end)``."""
    head = _SENTENCE_BREAK.split(text[:start])[-1]
    tail = _SENTENCE_BREAK.split(text[end:])[0]
    return head + text[start:end] + tail


def finance_certainty(reply: str, domain: str) -> Finding | None:
    """Amend a deterministic return or price prediction in a finance context with a risk note."""
    if not isinstance(reply, str) or _FIN_SAFE.search(reply):
        return None
    if domain != "finance" and not _FIN_CONTEXT.search(reply):
        return None
    hit = _first_claim(_FIN_CERTAIN, reply)
    return Finding("finance_certainty", "amend", FINANCE_NOTE, hit.group(0)) if hit else None


def medical_dosage(reply: str, domain: str) -> Finding | None:
    """Amend a dosage given without a doctor/pharmacist disclaimer in a health context.

    Drug-specific units (mg, 片, tablets…) need the health domain or a drug word; ambiguous
    ones (g, 毫升, 颗, "3 times a day") need a drug word in the reply itself.
    """
    if not isinstance(reply, str) or _MED_SAFE.search(reply):
        return None
    drug = bool(_DRUG.search(reply))
    strong = _DOSE_STRONG.search(reply) if drug or domain == "health" else None
    hit = strong or (_DOSE_WEAK.search(reply) if drug else None)
    return Finding("medical_dosage", "amend", MEDICAL_NOTE, hit.group(0)) if hit else None


@lru_cache(maxsize=16)
def _disowned(name: str, english_name: str) -> re.Pattern[str]:
    return re.compile(
        rf"我(?:已经|其实|并)?(?:不是|不再是){re.escape(name)}"
        rf"|\bI(?:'m|’m| am) (?:not|no longer) {re.escape(english_name)}\b",
        re.I,
    )


def identity_drift(reply: str, name: str = "天马", english_name: str = "tianma") -> Finding | None:
    """Block a reply that disowns the assistant's identity or claims to have no limits."""
    if not isinstance(reply, str):
        return None
    hit = _first_claim(_disowned(name, english_name), reply) or _first_claim(_UNLIMITED, reply)
    if hit is None:
        return None
    note = (
        f"我是{name}，你的私人助理，这个请求我不能这样回答。"
        f"/ I am {english_name}, your private assistant; I can't answer that way."
    )
    return Finding("identity_drift", "block", note, hit.group(0))


def _normalise(text: str) -> tuple[str, str, list[int]]:
    """NFKC text, its lower-cased letters and digits only, and each kept char's NFKC index."""
    nfkc = unicodedata.normalize("NFKC", text)
    chars: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(nfkc):
        if ch.isalnum():
            for low in ch.lower():
                chars.append(low)
                index.append(i)
    return nfkc, "".join(chars), index


def cross_user_leak(reply: str, foreign_texts: Sequence[str], min_chars: int = 12) -> Finding | None:
    """Block a reply that copies another user's memory text.

    After normalisation (NFKC, lower case, no whitespace or punctuation) a hit is a common
    substring of ``min_chars`` chars, or of 80 % of a foreign text of at least 8 chars.
    """
    if not isinstance(reply, str) or not reply:
        return None
    nfkc, norm, index = _normalise(reply)
    grams: dict[int, set[str]] = {}
    for text in foreign_texts or ():
        if not isinstance(text, str):
            continue
        foreign = _normalise(text)[1]
        need = max(1, min_chars)
        if len(foreign) >= 8:
            need = min(need, math.ceil(0.8 * len(foreign)))
        if len(foreign) < need or len(norm) < need:
            continue
        seen = grams.setdefault(need, {norm[i : i + need] for i in range(len(norm) - need + 1)})
        start = next((i for i in range(len(foreign) - need + 1) if foreign[i : i + need] in seen), None)
        if start is None:
            continue
        end = start + need
        while end < len(foreign) and foreign[start : end + 1] in norm:
            end += 1
        at = norm.find(foreign[start:end])
        evidence = nfkc[index[at] : index[at + end - start - 1] + 1]
        return Finding("cross_user_leak", "block", LEAK_NOTE, evidence)
    return None


def hard_redline(reply: str) -> Finding | None:
    """Block instructions for weapons, drug synthesis or self-harm; refusals and warnings pass."""
    if not isinstance(reply, str):
        return None
    for pattern, note in ((_SELF_HARM, SELF_HARM_NOTE), (_HARM, HARM_NOTE)):
        for m in pattern.finditer(reply):
            if not _REFUSAL.search(_sentence(reply, m.start(), m.end())):
                return Finding("hard_redline", "block", note, m.group(0))
    return None


def run_builtin_checks(
    reply: str,
    message: str,
    domain: str,
    foreign_texts: Sequence[str] = (),
    identity: tuple[str, str] = ("天马", "tianma"),
) -> list[Finding]:
    """Run every built-in check in a fixed order: the block checks first, then the amend checks.

    The user's ``message`` widens the context: finance or drug words in it make the finance
    or health checks apply even when ``domain`` says otherwise.
    """
    message = message if isinstance(message, str) else ""
    fin_domain = "finance" if _FIN_CONTEXT.search(message) else domain
    med_domain = "health" if _DRUG.search(message) else domain
    found = [
        hard_redline(reply),
        cross_user_leak(reply, foreign_texts) if foreign_texts else None,
        identity_drift(reply, *identity),
        finance_certainty(reply, fin_domain),
        medical_dosage(reply, med_domain),
    ]
    return [f for f in found if f is not None]


def apply_findings(reply: str, findings: Sequence[Finding]) -> tuple[str, Outcome]:
    """The reply after ``findings``: the first block's note, or the reply with amend notes appended once."""
    block = next((f for f in findings if f.severity == "block"), None)
    if block is not None:
        return block.note, "blocked"
    amends = [f for f in findings if f.severity == "amend"]
    if not amends:
        return reply, "pass"
    out = reply if isinstance(reply, str) else ""
    for finding in amends:
        if finding.note and finding.note not in out:
            out = f"{out}\n\n{finding.note}" if out else finding.note
    return out, "amended"
