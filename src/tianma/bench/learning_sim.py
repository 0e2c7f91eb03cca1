"""Scenario model and the simulated user of ``bench/learning.py`` (see its docstring).

The user states preferences, changes their mind, says passing moods, and asks domain
questions whose good answer depends on a preference. Each reply is judged by provenance:
did the turn carry (inject, or hold as a resident preference) a memory that traces back to
an event where the *current* version of the preference was stated?
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tianma import Runtime
from tianma.turn import Turn

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
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


@dataclass(frozen=True, slots=True)
class Change:
    at_turn: int
    statement: str


@dataclass(frozen=True, slots=True)
class Preference:
    id: str
    domain: str
    statement: str
    kind: str
    changes: tuple[Change, ...]
    question_templates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Mood:
    at_turn: int
    text: str


@dataclass(frozen=True, slots=True)
class User:
    id: str
    preferences: tuple[Preference, ...]
    moods: tuple[Mood, ...]

    @property
    def lang(self) -> str:
        text = self.preferences[0].statement if self.preferences else ""
        return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    seed: int
    users: tuple[User, ...]
    turns_per_user: int
    dialogue_length: int


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file (format: bench/scenarios/README.md)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    users = []
    for u in raw["users"]:
        prefs = tuple(
            Preference(
                id=p["id"],
                domain=p["domain"],
                statement=p["statement"],
                kind=p.get("kind", "explicit"),
                changes=tuple(Change(int(c["at_turn"]), c["statement"]) for c in p.get("changes", [])),
                question_templates=tuple(p["question_templates"]),
            )
            for p in u["preferences"]
        )
        if any(p.kind not in ("explicit", "implicit") or not p.question_templates for p in prefs):
            raise ValueError(f"user {u['id']}: kind must be explicit|implicit, templates non-empty")
        moods = tuple(Mood(int(m["at_turn"]), m["text"]) for m in u.get("moods", []))
        users.append(User(u["id"], prefs, moods))
    return Scenario(
        raw["name"], int(raw["seed"]), tuple(users), int(raw["turns_per_user"]), int(raw["dialogue_length"])
    )


def shrink(sc: Scenario, users: int, turns: int) -> Scenario:
    """Quick mode: fewer users and turns, change and mood turns scaled to fit."""
    f = turns / sc.turns_per_user

    def at(t: int) -> int:
        return min(turns - 1, round(t * f))

    small = tuple(
        User(
            u.id,
            tuple(
                Preference(
                    p.id,
                    p.domain,
                    p.statement,
                    p.kind,
                    tuple(Change(at(c.at_turn), c.statement) for c in p.changes),
                    p.question_templates,
                )
                for p in u.preferences
            ),
            tuple(Mood(at(m.at_turn), m.text) for m in u.moods),
        )
        for u in sc.users[:users]
    )
    return Scenario(sc.name + "-quick", sc.seed, small, turns, sc.dialogue_length)


@dataclass(slots=True)
class PrefState:
    """Per preference: the event ids stating each version (index = version)."""

    pref: Preference
    version: int = -1
    events: list[list[str]] = field(default_factory=list)

    @property
    def current(self) -> str:
        return self.pref.statement if self.version <= 0 else self.pref.changes[self.version - 1].statement


def fixed_turns(user: User, n: int, dlen: int) -> dict[int, tuple[str, str, str | None]]:
    """Turn index → (kind, text, preference id) for statements, changes and moods."""
    fixed: dict[int, tuple[str, str, str | None]] = {}

    def put(t: int, item: tuple[str, str, str | None]) -> None:
        while t in fixed and t < n - 1:
            t += 1
        fixed.setdefault(t, item)

    for m in user.moods:
        put(m.at_turn, ("mood", m.text, None))
    for c_pref in user.preferences:
        for c in c_pref.changes:
            put(c.at_turn, ("change", c.statement, c_pref.id))
    for j, p in enumerate(user.preferences):
        put(min(n - 1, j * dlen + j % 2), ("statement", p.statement, p.id))
    return fixed


def judge(rt: Runtime, user_id: str, turn: Turn, ps: PrefState, window: set[str]) -> dict[str, Any]:
    """Did the turn carry the current version of the preference, or only a superseded one?

    Carriers: an injected event (its own id), an injected or resident learnt record (its
    provenance), or the short-term window (a statement earlier in this dialogue, verbatim in
    the prompt). A learnt record whose provenance mixes events of the current and of a
    superseded version is ambiguous (its content may be the old one): it counts as neither.
    """
    current = set(ps.events[ps.version]) if ps.version >= 0 else set()
    older = {e for v in ps.events[: max(ps.version, 0)] for e in v}
    records = {r.id: r for r in rt.memories(user_id) if r.kind != "event"}
    learnt = [records[m.id] for m in turn.memories if m.id in records]
    learnt += [
        r for r in records.values() if r.kind == "preference" and r.status == "active" and r.content in turn.preferences
    ]  # fmt: skip
    events = {e for m in turn.memories if m.kind == "event" for e in m.source_event_ids}
    via: set[str] = set()
    stale_via: set[str] = set()
    if events & current:
        via.add("event")
    if events & older:
        stale_via.add("event")
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
        "stale": not via and bool(stale_via or mixed),
        "via": sorted(via),
        "stale_via": sorted(stale_via),
        "mixed": mixed,
        "learnt_carried": sorted({f"{r.kind}:{r.status}:{r.content}" for r in learnt}),
    }


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
    records: list[dict[str, Any]] = field(default_factory=list)
    dialogue_of: dict[str, int] = field(default_factory=dict)

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
            kind, text, pid = self._next(t, d, fixed, prefs, pending, repeats)
            if kind == pending_kind(pending):
                pending = None
            turn = self.rt.chat(user.id, text, dialogue_id=dialogue_id, at=at)
            self.dialogue_of[turn.event_id] = d
            rec: dict[str, Any] = {"user": user.id, "turn": t, "dialogue": d, "kind": kind, "pref": pid,
                                   "text": text, "event_id": turn.event_id, "reaction": None}  # fmt: skip
            if kind in ("statement", "change", "correction") and pid:
                ps = prefs[pid]
                if kind != "correction":
                    ps.version += 1
                    ps.events.append([])
                ps.events[ps.version].append(turn.event_id)
            elif kind in ("question", "rephrase", "repeat") and pid:
                ps = prefs[pid]
                window = {e for e, dd in self.dialogue_of.items() if dd == d and e != turn.event_id}
                rec.update(judge(self.rt, user.id, turn, ps, window), version=ps.version)
                rng = self._rng(t, "react")
                if rec["hit"]:
                    if rng.random() < LIKE_P:
                        self.rt.feedback(turn.event_id, "like", at=at)
                        rec["reaction"] = "like"
                elif rng.random() < CORRECTION_P:
                    pending = ("correction", CORRECT[lang] + ps.current, pid)
                    rec["reaction"] = "correction"
                elif rng.random() < REPHRASE_P:
                    pending = ("rephrase", REPHRASE[lang] + self._template(t, ps.pref, text), pid)
                    rec["reaction"] = "rephrase"
                else:
                    repeats.append((d + 1, text, pid))
                    rec["reaction"] = "repeat"
            rec.update(memories=[(m.kind, m.id) for m in turn.memories], preferences=list(turn.preferences),
                       signals=[s.get("type") for s in turn.signals], reflection_run=turn.reflection_run_id)  # fmt: skip
            self.records.append(rec)
            self.tick()
            if pos == self.dlen - 1 or t == self.n - 1:
                end = at + TURN_GAP
                self.rt.end_dialogue(dialogue_id, at=end)
                if self.reflect_nightly:
                    self.rt.reflect(user.id, at=end + timedelta(hours=12), trigger="nightly")
        return self.records

    def _template(self, t: int, pref: Preference, avoid: str | None = None) -> str:
        options = [q for q in pref.question_templates if q != avoid] or list(pref.question_templates)
        return self._rng(t, "template").choice(options)

    def _next(
        self,
        t: int,
        d: int,
        fixed: dict[int, tuple[str, str, str | None]],
        prefs: dict[str, PrefState],
        pending: tuple[str, str, str] | None,
        repeats: list[tuple[int, str, str]],
    ) -> tuple[str, str, str | None]:
        if t in fixed:
            return fixed[t]
        if pending is not None:
            return pending
        for i, (due, text, pid) in enumerate(repeats):
            if due <= d:
                del repeats[i]
                return "repeat", text, pid
        stated = [ps for ps in prefs.values() if ps.version >= 0]
        rng = self._rng(t, "choice")
        if not stated or rng.random() < CHITCHAT_P:
            return "chitchat", rng.choice(CHITCHAT[self.user.lang]), None
        ps = rng.choice(stated)
        return "question", self._template(t, ps.pref), ps.pref.id


def pending_kind(pending: tuple[str, str, str] | None) -> str | None:
    return pending[0] if pending else None


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
