"""The simulated user of :mod:`tianma.bench.learning` (see its docstring); the scenario model is
:mod:`tianma.bench.learning_scenario`.

The user states preferences (and restates them in other words), changes their mind, says passing
moods and time-scoped wishes, tells a secret now and then, chats, and asks domain questions whose
good answer depends on a preference. Each reply is judged by provenance: did the turn carry
(inject, or hold resident) something that traces back to an event where the *current* version of
the preference was stated — and did it carry a superseded version, or a mood past its period?
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tianma import Runtime
from tianma.bench.learning_scenario import (
    WINDOW_TURNS,
    Change,
    Mood,
    Preference,
    Scenario,
    Secret,
    User,
    load_scenario,
    shrink,
)
from tianma.turn import Turn

__all__ = ["WINDOW_TURNS", "Change", "Mood", "Preference", "Scenario", "Secret", "Sim", "User", "judge",
           "load_scenario", "shrink"]  # fmt: skip

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)  # a Monday: "this week" ends on day 7
TURN_GAP = timedelta(minutes=3)
CHITCHAT_P = 0.12
LIKE_P = 0.5
CORRECTION_P = 0.5
REPHRASE_P = 0.5  # of the misses not corrected; the rest repeat the question in a later dialogue
CHITCHAT = {
    "zh": ["谢谢", "好的，知道了", "今天天气怎么样", "你觉得呢", "嗯嗯"],
    "en": ["Thanks!", "Got it.", "How's the weather today?", "Sounds good.", "Okay."],
}
REPHRASE = {"zh": "我的意思是，", "en": "I mean, "}
CORRECT = {"zh": "不对，我说过：", "en": "No, that's wrong. I told you: "}


MOOD_QUESTION_P = 0.15
"""Share of free turns that ask a question a mood or time-scoped wish would (wrongly, once over) change."""


@dataclass(slots=True)
class PrefState:
    """Per preference: the event ids stating each version (index = version)."""

    pref: Preference
    version: int = -1
    events: list[list[str]] = field(default_factory=list)

    @property
    def current(self) -> str:
        return self.pref.statement if self.version <= 0 else self.pref.changes[self.version - 1].statement


Fixed = tuple[str, str, str | None, int]
"""(kind, text, preference or mood/secret id, version of the preference stated; -1 otherwise)."""


def fixed_turns(user: User, n: int, dlen: int) -> dict[int, Fixed]:
    """Turn index → what the user says there: statements, restatements, changes, moods, secrets."""
    fixed: dict[int, Fixed] = {}

    def put(t: int, item: Fixed) -> None:
        while t in fixed and t < n - 1:
            t += 1
        fixed.setdefault(t, item)

    for k, m in enumerate(user.moods):
        put(m.at_turn, ("mood", m.text, f"mood{k}", -1))
    for k, sec in enumerate(user.secrets):
        put(sec.at_turn, ("secret", sec.text, f"secret{k}", -1))
    for p in user.preferences:
        versions: list[tuple[tuple[str, ...], tuple[int, ...]]] = [(p.phrasings, p.restate_at)]
        versions += [(c.phrasings, c.restate_at) for c in p.changes]
        for v, c in enumerate(p.changes, 1):
            put(c.at_turn, ("change", c.statement, p.id, v))
        for v, (phrasings, again) in enumerate(versions):
            for k, t in enumerate(again):
                put(t, ("restate", phrasings[(k + 1) % len(phrasings)], p.id, v))
    for j, p in enumerate(user.preferences):
        put(min(n - 1, j * dlen + j % 2), ("statement", p.statement, p.id, 0))
    return fixed


def mood_end(said: datetime, period: str) -> datetime:
    """When a mood or time-scoped wish stops holding, by the calendar of the simulation (UTC):
    the end of that day, of the third day, or of that week (Sunday midnight). Written apart from
    tianma's own rule so the judge does not grade tianma by tianma."""
    midnight = datetime(said.year, said.month, said.day, tzinfo=UTC)
    days = {"day": 1, "days": 3, "week": 7 - said.weekday()}[period]
    return midnight + timedelta(days=days)


def carried_sources(rt: Runtime, user_id: str, turn: Turn) -> tuple[set[str], list[Any]]:
    """Event ids behind everything the turn put in the prompt (injected and resident), and the
    learnt records among them."""
    records = {r.id: r for r in rt.memories(user_id) if r.kind != "event"}
    shown = [m for m in (*turn.memories, *turn.resident) if m.superseded_by is None]
    learnt = [records[m.id] for m in shown if m.id in records]
    events = {e for m in shown if m.kind == "event" for e in m.source_event_ids}
    return events, learnt


def marked(turn: Turn) -> dict[str, str]:
    """Statements the prompt showed as replaced: their id → the newer statement named."""
    return {m.id: m.superseded_by for m in turn.resident if m.superseded_by is not None}


def judge(rt: Runtime, user_id: str, turn: Turn, ps: PrefState, window: set[str]) -> dict[str, Any]:
    """Did the turn carry the current version of the preference, and did it carry a superseded one?

    Carriers: an injected or resident event (its own id), an injected or resident learnt record
    (its provenance), or the short-term window (a statement earlier in this dialogue, verbatim in
    the prompt — never counted as stale: the user said it in this very conversation). A learnt
    record whose provenance mixes events of the current and of a superseded version is ambiguous
    (its content may be the old one): it counts as neither.
    """
    current = set(ps.events[ps.version]) if ps.version >= 0 else set()
    older = {e for v in ps.events[: max(ps.version, 0)] for e in v}
    events, learnt = carried_sources(rt, user_id, turn)
    via: set[str] = set()
    stale_via: set[str] = set()
    if events & current:
        via.add("event")
    if events & older:
        stale_via.add("event")
    # shown marked as replaced: fine when it names the current statement, stale when it names
    # something else (and never a hit: the prompt says it no longer holds)
    if any(old in older and newer not in current for old, newer in marked(turn).items()):
        stale_via.add("marked wrongly")
    mixed = []
    for rec in learnt:
        ids = set(rec.provenance.event_ids)
        if ids & current and ids & older:
            mixed.append(rec.content)
        elif ids & current:
            via.add("learnt")
        elif ids & older:
            stale_via.add("learnt")
    if window & current:
        via.add("window")
    return {
        "hit": bool(via),
        "stale": bool(stale_via),
        "stale_only": not via and bool(stale_via or mixed),
        "via": sorted(via),
        "stale_via": sorted(stale_via),
        "mixed": mixed,
        "learnt_carried": sorted({f"{r.kind}:{r.status}:{r.content}" for r in learnt}),
        "marked": len(set(marked(turn)) & (older | current)),
    }


@dataclass(slots=True)
class MoodState:
    mood: Mood
    event_id: str
    ends: datetime


@dataclass(slots=True)
class Sim:
    """One simulated user against one runtime; call :meth:`run`."""

    rt: Runtime
    user: User
    seed: int
    n: int
    dlen: int
    reflect_nightly: bool
    tick: Callable[[], None]
    phase: Callable[[str], None] = lambda _: None
    """Told ``"turn"`` before each message and ``"nightly"`` before each nightly reflection, so
    chat-model calls can be attributed to what caused them."""
    records: list[dict[str, Any]] = field(default_factory=list)
    dialogue_of: dict[str, int] = field(default_factory=dict)
    moods: list[MoodState] = field(default_factory=list)

    def _rng(self, t: int, what: str) -> random.Random:
        return random.Random(f"{self.seed}:{self.user.id}:{t}:{what}")

    def run(self) -> list[dict[str, Any]]:
        user, lang = self.user, self.user.lang
        prefs = {p.id: PrefState(p) for p in user.preferences}
        fixed = fixed_turns(user, self.n, self.dlen)
        pending: tuple[str, str, str] | None = None  # (kind, text, pref id) for the next turn
        repeats: list[tuple[int, str, str]] = []  # (earliest dialogue, text, pref id)
        dialogue_id = ""
        for t in range(self.n):
            d, pos = divmod(t, self.dlen)
            if pos == 0:
                dialogue_id = f"{user.id}-d{d:02d}"
            at = START + timedelta(days=d) + pos * TURN_GAP
            kind, text, pid, _version = self._next(t, d, fixed, prefs, pending, repeats)
            if kind == pending_kind(pending):
                pending = None
            self.phase("turn")
            began = time.perf_counter()
            turn = self.rt.chat(user.id, text, dialogue_id=dialogue_id, at=at)
            ms = (time.perf_counter() - began) * 1000
            self.dialogue_of[turn.event_id] = d
            rec: dict[str, Any] = {"user": user.id, "lang": lang, "turn": t, "dialogue": d, "kind": kind, "pref": pid,
                                   "text": text, "event_id": turn.event_id, "reaction": None, "ms": ms}  # fmt: skip
            if kind in ("statement", "change", "restate", "correction") and pid:
                ps = prefs[pid]
                if kind in ("statement", "change"):
                    ps.version += 1
                    ps.events.append([])
                ps.events[ps.version].append(turn.event_id)
            elif kind == "mood" and pid:
                mood = user.moods[int(pid.removeprefix("mood"))]
                self.moods.append(MoodState(mood, turn.event_id, mood_end(at, mood.period)))
            elif kind == "secret":
                rec["reply"] = turn.reply
            elif kind == "mood_question" and pid:
                state = self.moods[int(pid)]
                events, learnt = carried_sources(self.rt, user.id, turn)
                carried = state.event_id in events or any(state.event_id in r.provenance.event_ids for r in learnt)
                rec.update(mood_type=state.mood.type, after_period=at >= state.ends, mood_carried=carried)
            elif kind in ("question", "rephrase", "repeat") and pid:
                ps = prefs[pid]
                window = {e for e, dd in self.dialogue_of.items() if dd == d and e != turn.event_id}
                rec.update(judge(self.rt, user.id, turn, ps, window), version=ps.version)
                self._react(t, at, turn, rec, ps, text, lang, repeats)
                pending = rec.pop("_pending", None) or pending
            rec.update(memories=[(m.kind, m.id) for m in turn.memories], resident=[(m.kind, m.id) for m in turn.resident],
                       signals=[s.type for s in turn.signals], reflection_run=turn.reflection_run_id)  # fmt: skip
            self.records.append(rec)
            self.tick()
            if pos == self.dlen - 1 or t == self.n - 1:
                end = at + TURN_GAP
                self.rt.end_dialogue(dialogue_id, at=end)
                if self.reflect_nightly:
                    self.phase("nightly")
                    self.rt.reflect(user.id, at=end + timedelta(hours=12), trigger="nightly")
        return self.records

    def _react(self, t: int, at: datetime, turn: Turn, rec: dict[str, Any], ps: PrefState, text: str,
               lang: str, repeats: list[tuple[int, str, str]]) -> None:  # fmt: skip
        """Seed 001 §2.3: a hit gets a like now and then; a miss a correction, a rephrase or,
        later, the same question again."""
        rng = self._rng(t, "react")
        if rec["hit"]:
            if rng.random() < LIKE_P:
                self.rt.feedback(turn.event_id, "like", at=at)
                rec["reaction"] = "like"
        elif rng.random() < CORRECTION_P:
            rec["_pending"] = ("correction", CORRECT[lang] + ps.current, ps.pref.id)
            rec["reaction"] = "correction"
        elif rng.random() < REPHRASE_P:
            rec["_pending"] = ("rephrase", REPHRASE[lang] + self._template(t, ps.pref, text), ps.pref.id)
            rec["reaction"] = "rephrase"
        else:
            repeats.append((rec["dialogue"] + 1, text, ps.pref.id))
            rec["reaction"] = "repeat"

    def _template(self, t: int, pref: Preference, avoid: str | None = None) -> str:
        options = [q for q in pref.question_templates if q != avoid] or list(pref.question_templates)
        return self._rng(t, "template").choice(options)

    def _next(
        self,
        t: int,
        d: int,
        fixed: dict[int, Fixed],
        prefs: dict[str, PrefState],
        pending: tuple[str, str, str] | None,
        repeats: list[tuple[int, str, str]],
    ) -> tuple[str, str, str | None, int]:
        if t in fixed:
            kind, text, pid, version = fixed[t]
            if kind != "restate" or (pid and prefs[pid].version == version):
                return fixed[t]
        if pending is not None:
            return (*pending, -1)
        for i, (due, text, pid) in enumerate(repeats):
            if due <= d:
                del repeats[i]
                return "repeat", text, pid, -1
        stated = [ps for ps in prefs.values() if ps.version >= 0]
        rng = self._rng(t, "choice")
        askable = [i for i, m in enumerate(self.moods) if m.mood.question_templates]
        if askable and rng.random() < MOOD_QUESTION_P:
            k = rng.choice(askable)
            return "mood_question", rng.choice(self.moods[k].mood.question_templates), str(k), -1
        if not stated or rng.random() < CHITCHAT_P:
            return "chitchat", rng.choice(self.user.chatter or CHITCHAT[self.user.lang]), None, -1
        ps = rng.choice(stated)
        return "question", self._template(t, ps.pref), ps.pref.id, -1


def pending_kind(pending: tuple[str, str, str] | None) -> str | None:
    return pending[0] if pending else None
