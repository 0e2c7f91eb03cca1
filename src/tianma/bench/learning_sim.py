"""Scenario model and the simulated user of :mod:`tianma.bench.learning` (see its docstring).

The user states preferences, changes their mind, says passing moods, and asks domain
questions whose good answer depends on a preference. Each reply is judged by provenance:
did the turn carry (inject, or hold as a resident preference) a memory that traces back to
an event where the *current* version of the preference was stated?
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tianma import Runtime
from tianma.errors import InvalidInputError
from tianma.settings import WindowSettings
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
WINDOW_TURNS = WindowSettings().turns
"""Dialogues must fit the default short-term window: the judge counts earlier statements of the
same dialogue as carried verbatim in the prompt."""
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
    """Read and validate a scenario file (format: ``data/scenarios/README.md`` in this package).

    Scenario sets are written by people who do not read this code, so every problem is named
    with the file and the JSON path of the offending value rather than surfacing as a KeyError
    deep inside a run.

    Raises:
        InvalidInputError: the file cannot be read, is not JSON, or breaks the format.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"scenario file {path}: cannot be read ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"scenario file {path}: not valid JSON ({exc})") from exc
    try:
        return _scenario(raw)
    except _Bad as exc:
        raise InvalidInputError(f"scenario file {path}: {exc}") from None


class _Bad(Exception):
    """A format problem, located by its JSON path; :func:`load_scenario` adds the file name."""


def _get(obj: dict[str, Any], key: str, kind: type, where: str, default: Any = ...) -> Any:
    if key not in obj:
        if default is ...:
            raise _Bad(f"{where}: missing key {key!r}")
        return default
    value = obj[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise _Bad(f"{where}.{key}: expected an integer, got {value!r}")
    if not isinstance(value, kind):
        raise _Bad(f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__}")
    if isinstance(value, str) and not value.strip():
        raise _Bad(f"{where}.{key}: must not be empty")
    return value


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _scenario(raw: Any) -> Scenario:
    top = _obj(raw, "top level")
    n = _get(top, "turns_per_user", int, "top level")
    dlen = _get(top, "dialogue_length", int, "top level")
    if n < 1:
        raise _Bad(f"turns_per_user: must be ≥ 1, got {n}")
    if not 1 <= dlen <= WINDOW_TURNS:
        raise _Bad(
            f"dialogue_length: must be 1–{WINDOW_TURNS} (the short-term window the judge relies on), got {dlen}"
        )
    raw_users = _get(top, "users", list, "top level")
    if not raw_users:
        raise _Bad("users: must not be empty")
    users: list[User] = []
    for i, raw_user in enumerate(raw_users):
        users.append(_user(_obj(raw_user, f"users[{i}]"), f"users[{i}]", n))
    ids = [u.id for u in users]
    if len(set(ids)) != len(ids):
        raise _Bad(f"users: duplicate ids {sorted({x for x in ids if ids.count(x) > 1})}")
    return Scenario(_get(top, "name", str, "top level"), _get(top, "seed", int, "top level"),
                    tuple(users), n, dlen)  # fmt: skip


def _at_turn(obj: dict[str, Any], where: str, n: int) -> int:
    at = int(_get(obj, "at_turn", int, where))
    if not 0 <= at < n:
        raise _Bad(f"{where}.at_turn: must be 0–{n - 1} (turns_per_user is {n}), got {at}")
    return at


def _user(u: dict[str, Any], where: str, n: int) -> User:
    uid = _get(u, "id", str, where)
    prefs: list[Preference] = []
    for j, raw_pref in enumerate(_get(u, "preferences", list, where)):
        pw = f"{where}.preferences[{j}]"
        p = _obj(raw_pref, pw)
        kind = _get(p, "kind", str, pw, "explicit")
        if kind not in ("explicit", "implicit"):
            raise _Bad(f"{pw}.kind: must be 'explicit' or 'implicit', got {kind!r}")
        changes = []
        for k, raw_change in enumerate(_get(p, "changes", list, pw, [])):
            cw = f"{pw}.changes[{k}]"
            c = _obj(raw_change, cw)
            changes.append(Change(_at_turn(c, cw, n), _get(c, "statement", str, cw)))
        templates = _get(p, "question_templates", list, pw)
        if not templates or not all(isinstance(q, str) and q.strip() for q in templates):
            raise _Bad(f"{pw}.question_templates: must be a non-empty list of non-empty strings")
        prefs.append(Preference(_get(p, "id", str, pw), _get(p, "domain", str, pw), _get(p, "statement", str, pw),
                                kind, tuple(changes), tuple(templates)))  # fmt: skip
    pids = [p.id for p in prefs]
    if len(set(pids)) != len(pids):
        raise _Bad(f"{where}.preferences: duplicate ids")
    moods = []
    for k, raw_mood in enumerate(_get(u, "moods", list, where, [])):
        mw = f"{where}.moods[{k}]"
        m = _obj(raw_mood, mw)
        moods.append(Mood(_at_turn(m, mw, n), _get(m, "text", str, mw)))
    return User(uid, tuple(prefs), tuple(moods))


def shrink(sc: Scenario, users: int, turns: int) -> Scenario:
    """A smaller run of the same scenario: the first ``users`` users, ``turns`` turns each, with
    change and mood turns scaled to fit, so every kind of event still happens."""

    def at(t: int) -> int:
        return min(turns - 1, round(t * turns / sc.turns_per_user))

    def pref(p: Preference) -> Preference:
        return replace(p, changes=tuple(Change(at(c.at_turn), c.statement) for c in p.changes))

    small = tuple(
        User(u.id, tuple(pref(p) for p in u.preferences), tuple(Mood(at(m.at_turn), m.text) for m in u.moods))
        for u in sc.users[:users]
    )
    return Scenario(f"{sc.name}-{len(small)}x{turns}", sc.seed, small, turns, sc.dialogue_length)


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
    phase: Callable[[str], None] = lambda _: None
    """Told ``"turn"`` before each message and ``"nightly"`` before each nightly reflection, so
    chat-model calls can be attributed to what caused them."""
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
            self.phase("turn")
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
                    self.phase("nightly")
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
