"""Scoring of the learning benchmark: per-arm rates, the curves over turns, LLM cost, and
what each user's store holds at the end (moods leaked into preferences, learnt records).

Kept apart from :mod:`tianma.bench.learning` (which runs the arms and writes the report) so the
rates and curves can be recomputed from a result file's records without running anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from tianma import Runtime
from tianma.bench.common import Tokenizer
from tianma.guardrails.secrets import NOTICE_EN, NOTICE_ZH
from tianma.llm.summary import SUMMARY_PROMPT
from tianma.prompting import REFLECTION_SYSTEM

QUESTION_KINDS = ("question", "rephrase", "repeat")
"""User turns that ask something whose good answer depends on a preference: they are judged."""
NEGATIVE_KINDS = ("correction", "rephrase", "repeat")
"""The simulated user's negative reactions to a miss (seed 001 §2.3)."""
LEARNING_PURPOSES = ("reflection",)
"""Chat-model calls made to learn (not to answer the user, nor to fold the short-term window)."""


def _rate(part: float, whole: int) -> float:
    return part / max(1, whole)


def metrics(
    records: Sequence[dict[str, Any]], users: dict[str, Any], n: int, kinds: dict[str, str]
) -> dict[str, Any]:
    """Hit, repeat, negative-signal, stale and mood-as-preference rates of one arm.

    ``n`` is the number of turns per user (for the quarters); ``kinds`` maps a preference id
    to ``explicit`` / ``implicit``, so the misses can be told apart by how the preference was said.
    """
    qs = [r for r in records if r["kind"] in QUESTION_KINDS]
    quarters: list[float | None] = []
    for k in range(4):
        bucket = [r for r in qs if k * n / 4 <= r["turn"] < (k + 1) * n / 4]
        quarters.append(_rate(sum(r["hit"] for r in bucket), len(bucket)) if bucket else None)
    moods = sum(u["moods"]["moods"] for u in users.values())
    leaked = sum(u["moods"]["leaked_moods"] for u in users.values())
    per_pref: dict[str, dict[str, int]] = {}
    by_kind: dict[str, dict[str, int]] = {}
    for r in qs:
        for key, table in ((r["pref"], per_pref), (kinds.get(r["pref"], "?"), by_kind)):
            row = table.setdefault(key, {"hits": 0, "questions": 0})
            row["hits"] += int(r["hit"])
            row["questions"] += 1
    mood_qs = [r for r in records if r["kind"] == "mood_question"]
    after = [r for r in mood_qs if r["after_period"]]
    during = [r for r in mood_qs if not r["after_period"]]
    told = sum(u.get("secrets", {}).get("told", 0) for u in users.values())
    return {
        "turns": len(records),
        "question_turns": len(qs),
        "stale_only_rate": _rate(sum(r.get("stale_only", False) for r in qs), len(qs)),
        "mood_questions_after_period": len(after),
        "mood_leak_rate": _rate(sum(r["mood_carried"] for r in after), len(after)),
        "mood_questions_in_period": len(during),
        "mood_in_period_carried_rate": _rate(sum(r["mood_carried"] for r in during), len(during)),
        "secrets_told": told,
        "secrets_leaked": sum(len(u.get("secrets", {}).get("leaked", [])) for u in users.values()),
        "secrets_explained": sum(u.get("secrets", {}).get("explained", 0) for u in users.values()),
        "hit_rate": _rate(sum(r["hit"] for r in qs), len(qs)),
        "repeat_rate": _rate(sum(r["kind"] == "repeat" for r in qs), len(qs)),
        "negative_rate": _rate(sum(r["kind"] in NEGATIVE_KINDS for r in records), len(records)),
        "memory_hit_rate": _rate(sum(bool(set(r["via"]) - {"window"}) for r in qs), len(qs)),
        "window_only_hits": sum(r["via"] == ["window"] for r in qs),
        "mixed_provenance_turns": sum(bool(r["mixed"]) for r in qs),
        "stale_rate": _rate(sum(r["stale"] for r in qs), len(qs)),
        "mood_as_preference_rate": _rate(leaked, moods),
        "moods": moods,
        "moods_leaked": leaked,
        "hit_by_quarter": quarters,
        "hit_by_preference": per_pref,
        "hit_by_preference_kind": by_kind,
    }


def curve(records: Sequence[dict[str, Any]], n: int, bins: int = 10) -> list[dict[str, Any]]:
    """Hit rate and negative-signal rate against the turn number, all users together.

    The user's turns ``0 … n-1`` are cut into ``bins`` windows of equal width (10 % of the
    turns each by default). In each window: the share of judged questions that hit (``None``
    when none was asked) and the share of all user turns that were a correction, a rephrase or
    a repeated question — the "it gets better with use" curve is the first rising and the
    second falling.
    """
    bins = max(1, min(bins, n))
    points = []
    for k in range(bins):
        lo, hi = k * n // bins, (k + 1) * n // bins
        turns = [r for r in records if lo <= r["turn"] < hi]
        qs = [r for r in turns if r["kind"] in QUESTION_KINDS]
        points.append({
            "turn_from": lo,
            "turn_to": hi - 1,
            "turn_mid": (lo + hi - 1) / 2,
            "user_turns": len(turns),
            "questions": len(qs),
            "hit_rate": _rate(sum(r["hit"] for r in qs), len(qs)) if qs else None,
            "negative_rate": _rate(sum(r["kind"] in NEGATIVE_KINDS for r in turns), len(turns)) if turns else None,
        })  # fmt: skip
    return points


def purpose(messages: Sequence[BaseMessage]) -> str:
    """What a prompt is for, read from its system message: ``reflection``, ``summary`` or ``turn``.

    The first message is tianma's fixed system prompt of each call site (a retry keeps it), so
    this holds for retries too.
    """
    head = str(messages[0].content) if messages else ""
    if head.startswith(REFLECTION_SYSTEM):
        return "reflection"
    if head.startswith(SUMMARY_PROMPT):
        return "summary"
    return "turn"


@dataclass(slots=True)
class ChatCalls:
    """Every call that reaches the chat model, by purpose and by phase, with cl100k token counts.

    Counted at the model boundary (the scripted model's responder sees every prompt, retries
    included), not from tianma's own reports, so nothing tianma forgets to report is missed.
    ``phase`` is set by the simulator: ``turn`` while a message is handled (a reply, and any
    reflection its triggers fire) and ``nightly`` for the nightly reflection.
    """

    count: Tokenizer
    phase: str = "turn"
    calls: dict[str, dict[str, int]] = field(default_factory=dict)

    def set_phase(self, phase: str) -> None:
        self.phase = phase

    def wrap(self, reply: Callable[[Sequence[BaseMessage]], str]) -> Callable[[Sequence[BaseMessage]], str]:
        """``reply`` with every call counted."""

        def counted(messages: Sequence[BaseMessage]) -> str:
            text = reply(messages)
            kind = purpose(messages)
            key = f"{kind}:{self.phase}" if kind == "reflection" else kind
            row = self.calls.setdefault(key, {"calls": 0, "tokens_in": 0, "tokens_out": 0})
            row["calls"] += 1
            row["tokens_in"] += sum(self.count(str(m.content)) for m in messages)
            row["tokens_out"] += self.count(text)
            return text

        return counted


def cost(calls: dict[str, dict[str, int]], user_turns: int) -> dict[str, Any]:
    """Totals and per-100-user-turn rates of the counted calls; ``learning`` sums the learning ones."""

    def per100(row: dict[str, int]) -> dict[str, float]:
        return {k: round(100 * v / max(1, user_turns), 2) for k, v in row.items()}

    by_purpose = dict(sorted(calls.items()))
    learning = {"calls": 0, "tokens_in": 0, "tokens_out": 0}
    for key, row in by_purpose.items():
        if key.split(":")[0] in LEARNING_PURPOSES:
            for k in learning:
                learning[k] += row[k]
    return {
        "user_turns": user_turns,
        "totals": by_purpose,
        "per_100_turns": {k: per100(v) for k, v in by_purpose.items()},
        "learning_totals": learning,
        "learning_per_100_turns": per100(learning),
    }


def mood_outcome(rt: Runtime, user_id: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Moods whose event ended up in the provenance of an active preference or fact."""
    moods = {r["event_id"]: r["text"] for r in records if r["kind"] == "mood"}
    learnt = [
        r for r in rt.memories(user_id, status="active") if r.kind in ("preference", "fact")
    ]  # fmt: skip
    leaked = [
        {"mood": text, "record": r.content, "kind": r.kind}
        for eid, text in moods.items()
        for r in learnt
        if eid in r.provenance.event_ids
    ]
    return {"moods": len(moods), "leaked": leaked, "leaked_moods": len({x["mood"] for x in leaked})}


def secret_outcome(home: Path, records: list[dict[str, Any]], values: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """Secrets told, those whose value is found in the raw bytes of any file of the data home,
    and how many replies told the user tianma does not keep them."""
    blobs = [f.read_bytes() for f in sorted(home.rglob("*")) if f.is_file()]
    told = [r for r in records if r["kind"] == "secret"]
    leaked = sorted({v for r in told for v in values.get(r["pref"] or "", ())
                     if any(_needle(r["text"], v).encode() in b for b in blobs)})  # fmt: skip
    explained = sum(any(n in (r.get("reply") or "") for n in (NOTICE_ZH, NOTICE_EN)) for r in told)
    return {"told": len(told), "leaked": leaked, "explained": explained}


def _needle(text: str, value: str) -> str:
    """What to look for on disk: a code of digits (a PIN, an SMS code) also occurs by chance in
    timestamps and binary pages, so it is looked for with the two characters the user wrote
    before it, which only a copy of the message holds."""
    if not value.isdigit() and len(value) >= 6:
        return value
    start = text.find(value)
    return text[max(0, start - 2) : start + len(value)] if start >= 0 else value


def learnt_summary(rt: Runtime, user_id: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every learnt (non-event, non-signal) record at the end, its events named by turn."""
    label = {r["event_id"]: f"t{r['turn']}:{r['kind']}:{r['pref'] or ''}" for r in records}
    return [
        {
            "kind": r.kind,
            "status": r.status,
            "content": r.content,
            "key": r.key,
            "confidence": round(r.confidence, 3),
            "events": [label.get(e, e) for e in r.provenance.event_ids],
        }
        for r in rt.memories(user_id)
        if r.kind not in ("event", "signal")
    ]
