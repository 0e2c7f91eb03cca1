"""Weekly behaviour statistics and the proposals they justify, as pure functions.

No LLM: a dialogue's topic is its domain (the lexicon of :mod:`tianma.policies.domains`), else
its most frequent content noun, else ``general``. Per topic the review counts dialogues,
average user turns per dialogue, the *interruption rate* (share of user turns judged by an
``impatience``, ``resubmit`` or ``regenerate`` signal: the user cut the reply short or asked again at once),
repeated questions (``repeat`` signals: asked again in a later dialogue), an emotion
distribution (positive = like/praise signals, negative = dislike/impatience/correction signals,
neutral = turns judged by none of them) and the user's turns by local hour (the zone passed in,
``Settings.zone``: a late turn is late where the user is).

Signals are attributed to the dialogue they were given in (a ``repeat`` judges a turn of an
*earlier* dialogue, but it is this dialogue's topic that keeps coming back).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from tianma.policies.credit import NEGATIVE
from tianma.policies.domains import DOMAIN_WORDS, infer_domain
from tianma.settings import describe_zone
from tianma.text.tokenize import nouns

INTERRUPTING = frozenset({"impatience", "resubmit", "regenerate"})
POSITIVE_EMOTION = frozenset({"like", "praise"})
NEGATIVE_EMOTION = frozenset({"dislike", "impatience", "correction"})
REPEAT_FACTOR = 2.0
"""A topic is proposed for when its repeats exceed this many times the mean over topics."""
MIN_REPEATS = 2
"""…and at least this many (one repeat in a quiet week is noise)."""
LATE_FROM, LATE_UNTIL = 22, 6
"""Late turns: at or after 22:00 or before 06:00, local time."""
LATE_SHARE = 0.3
MIN_TURNS_FOR_LATE = 10
MAX_EVIDENCE = 20
ZH_LABELS = {"finance": "理财", "health": "健康", "legal": "法律", "schedule": "日程", "food": "饮食",
             "travel": "旅行", "tech": "技术", "creative": "创作", "general": "日常"}  # fmt: skip
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")


@dataclass(frozen=True, slots=True)
class Turn:
    """One user message of the week."""

    event_id: str
    dialogue_id: str
    text: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Signal:
    """One signal of the week: its type, the dialogue it was given in, the turns it concerns."""

    type: str
    dialogue_id: str
    event_ids: tuple[str, ...]
    target_event_id: str


@dataclass(frozen=True, slots=True)
class Proposal:
    """A behaviour strategy the week's statistics justify (not yet written)."""

    content: str
    topic: str | None
    trigger: dict[str, Any]
    scope: str
    reason: str
    evidence: tuple[str, ...]


@dataclass
class Week:
    """A user's week, with the statistics the proposals are drawn from."""

    topics: list[dict[str, Any]] = field(default_factory=list)
    hours: dict[int, int] = field(default_factory=dict)
    late: dict[str, Any] = field(default_factory=dict)
    chinese: bool = False
    proposals: list[Proposal] = field(default_factory=list)


def topic_of(texts: Sequence[str]) -> str:
    """A dialogue's topic: its domain, else its most frequent content noun (ties: alphabetical)."""
    domain = infer_domain(" ".join(texts))
    if domain != "general":
        return domain
    counts = Counter(n for text in texts for n in nouns(text))
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0] if counts else "general"


def mostly_chinese(texts: Sequence[str]) -> bool:
    """Whether the user writes Chinese more than Latin script (by characters)."""
    joined = "".join(texts)
    return len(_CJK.findall(joined)) >= max(1, len(_LATIN.findall(joined)))


def is_late(at: datetime, zone: tzinfo) -> bool:
    """Whether ``at`` is at or after 22:00 or before 06:00 in ``zone``."""
    hour = at.astimezone(zone).hour
    return hour >= LATE_FROM or hour < LATE_UNTIL


def analyse(turns: Sequence[Turn], signals: Sequence[Signal], zone: tzinfo) -> Week:
    """The week's statistics per topic, its hour pattern and the proposals they justify; hours
    are those of ``zone`` (the users' time zone)."""
    by_dialogue: dict[str, list[Turn]] = {}
    local = [Turn(x.event_id, x.dialogue_id, x.text, x.at.astimezone(zone)) for x in turns]
    for turn in sorted(local, key=lambda x: (x.at, x.event_id)):
        by_dialogue.setdefault(turn.dialogue_id, []).append(turn)
    topic = {d: topic_of([x.text for x in ts]) for d, ts in by_dialogue.items()}
    sigs: dict[str, list[Signal]] = {}
    for s in signals:
        if s.dialogue_id in by_dialogue:
            sigs.setdefault(s.dialogue_id, []).append(s)
    week = Week(chinese=mostly_chinese([x.text for x in turns]))
    week.hours = dict(sorted(Counter(x.at.hour for x in local).items()))
    for name in sorted(set(topic.values())):
        dialogues = sorted(d for d in by_dialogue if topic[d] == name)
        week.topics.append(_topic_stats(name, [by_dialogue[d] for d in dialogues],
                                        [s for d in dialogues for s in sigs.get(d, [])]))  # fmt: skip
    week.late = _late_stats(by_dialogue, sigs, zone)
    week.proposals = _topic_proposals(week) + _late_proposals(week, by_dialogue, zone)
    return week


def _topic_stats(name: str, dialogues: list[list[Turn]], signals: list[Signal]) -> dict[str, Any]:
    turns = [x for ts in dialogues for x in ts]
    judged = {s.target_event_id for s in signals if s.type in POSITIVE_EMOTION | NEGATIVE_EMOTION}
    interrupted = {s.target_event_id for s in signals if s.type in INTERRUPTING}
    repeats = [s for s in signals if s.type == "repeat"]
    return {
        "topic": name,
        "dialogues": len(dialogues),
        "turns": len(turns),
        "avg_turns": round(len(turns) / len(dialogues), 2),
        "interruption_rate": round(len(interrupted) / len(turns), 3),
        "repeats": len(repeats),
        "emotion": {
            "positive": sum(s.type in POSITIVE_EMOTION for s in signals),
            "negative": sum(s.type in NEGATIVE_EMOTION for s in signals),
            "neutral": sum(x.event_id not in judged for x in turns),
        },
        "hours": dict(sorted(Counter(x.at.hour for x in turns).items())),
        "repeat_evidence": list(dict.fromkeys(e for s in repeats for e in s.event_ids)),
    }


def _late_stats(
    by_dialogue: dict[str, list[Turn]], sigs: dict[str, list[Signal]], zone: tzinfo
) -> dict[str, Any]:
    """Late dialogues (most turns late) against the rest: turns and negative signals per turn."""
    late = {d for d, ts in by_dialogue.items() if 2 * sum(is_late(x.at, zone) for x in ts) >= len(ts)}

    def rate(dialogues: set[str]) -> float:
        turns = sum(len(by_dialogue[d]) for d in dialogues)
        negative = sum(s.type in NEGATIVE for d in dialogues for s in sigs.get(d, []))
        return round(negative / turns, 3) if turns else 0.0

    total = sum(len(ts) for ts in by_dialogue.values())
    late_turns = sum(is_late(x.at, zone) for ts in by_dialogue.values() for x in ts)
    return {"turns": total, "late_turns": late_turns, "late_share": round(late_turns / total, 3) if total else 0.0,
            "late_dialogues": sorted(late), "late_negative_rate": rate(late),
            "other_negative_rate": rate(set(by_dialogue) - late)}  # fmt: skip


def _topic_proposals(week: Week) -> list[Proposal]:
    if not week.topics:
        return []
    mean = sum(t["repeats"] for t in week.topics) / len(week.topics)
    out = []
    for t in week.topics:
        if t["repeats"] < MIN_REPEATS or t["repeats"] <= REPEAT_FACTOR * mean:
            continue
        name = t["topic"]
        domain = name in DOMAIN_WORDS  # a domain scene; else a keyword (or, for "general", every turn)
        content = (
            f"在「{ZH_LABELS.get(name, name)}」话题上先给结论，再展开细节"
            if week.chinese
            else f"On {name}: give the conclusion first, then the details"
        )
        reason = (f"weekly behaviour review: topic {name!r} was asked again {t['repeats']} times, more than "
                  f"{REPEAT_FACTOR:g} × the mean {mean:.2f} over {len(week.topics)} topics "
                  f"(avg turns {t['avg_turns']}, interruption rate {t['interruption_rate']})")  # fmt: skip
        trigger: dict[str, Any] = (
            {"domains": [name]} if domain else {} if name == "general" else {"keywords": [name]}
        )
        out.append(Proposal(content, name, trigger, f"domain:{name}" if domain else "global", reason,
                            tuple(t["repeat_evidence"][:MAX_EVIDENCE])))  # fmt: skip
    return out


def _late_proposals(week: Week, by_dialogue: dict[str, list[Turn]], zone: tzinfo) -> list[Proposal]:
    late = week.late
    if late["turns"] < MIN_TURNS_FOR_LATE or late["late_share"] < LATE_SHARE:
        return []
    if late["late_negative_rate"] <= late["other_negative_rate"]:
        return []
    content = "22 点后回答尽量简洁" if week.chinese else "After 22:00, answer briefly"
    reason = (f"weekly behaviour review: {late['late_turns']} of {late['turns']} turns ({late['late_share']:.0%}) "
              f"at or after {LATE_FROM}:00 or before {LATE_UNTIL:02d}:00 ({describe_zone(zone)}), with {late['late_negative_rate']} "
              f"negative signals per turn there against {late['other_negative_rate']} otherwise")  # fmt: skip
    evidence = [x.event_id for d in late["late_dialogues"] for x in by_dialogue[d] if is_late(x.at, zone)]
    return [Proposal(content, None, {"hours": [LATE_FROM, LATE_UNTIL]}, "global", reason,
                     tuple(evidence[:MAX_EVIDENCE]))]  # fmt: skip
