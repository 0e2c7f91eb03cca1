"""Scenario files of ``tianma bench learning``: the simulated people, read and validated.

The format is in ``data/scenarios/README.md``. Scenario sets are written by people who do not
read this code, so every problem is named with the file and the JSON path of the offending value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tianma.errors import InvalidInputError
from tianma.settings import WindowSettings

WINDOW_TURNS = WindowSettings().turns
"""Dialogues must fit the default short-term window: the judge counts earlier statements of the
same dialogue as carried verbatim in the prompt."""
PERIODS = ("day", "days", "week")


@dataclass(frozen=True, slots=True)
class Change:
    at_turn: int
    phrasings: tuple[str, ...]
    restate_at: tuple[int, ...] = ()

    @property
    def statement(self) -> str:
        return self.phrasings[0]


@dataclass(frozen=True, slots=True)
class Preference:
    id: str
    domain: str
    phrasings: tuple[str, ...]
    kind: str
    changes: tuple[Change, ...]
    question_templates: tuple[str, ...]
    restate_at: tuple[int, ...] = ()

    @property
    def statement(self) -> str:
        return self.phrasings[0]


@dataclass(frozen=True, slots=True)
class Mood:
    """A passing mood or a time-scoped wish: it holds for its period and must never last."""

    at_turn: int
    text: str
    period: str = "day"
    type: str = "mood"
    domain: str = ""
    question_templates: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Secret:
    at_turn: int
    text: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class User:
    id: str
    preferences: tuple[Preference, ...]
    moods: tuple[Mood, ...]
    secrets: tuple[Secret, ...] = ()
    chatter: tuple[str, ...] = ()
    language: str | None = None

    @property
    def lang(self) -> str:
        if self.language:
            return self.language
        text = self.preferences[0].statement if self.preferences else ""
        return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    seed: int
    users: tuple[User, ...]
    turns_per_user: int
    dialogue_length: int
    split: str = ""


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file (format: ``data/scenarios/README.md`` in this package).

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


def _texts(obj: dict[str, Any], key: str, where: str, default: Any = ...) -> tuple[str, ...]:
    items = _get(obj, key, list, where, default)
    if not all(isinstance(q, str) and q.strip() for q in items):
        raise _Bad(f"{where}.{key}: must be a list of non-empty strings")
    return tuple(items)


def _phrasings(obj: dict[str, Any], where: str) -> tuple[str, ...]:
    """``phrasings`` (a list), or the older single ``statement``."""
    if "phrasings" in obj:
        out = _texts(obj, "phrasings", where)
        if not out:
            raise _Bad(f"{where}.phrasings: must not be empty")
        return out
    return (_get(obj, "statement", str, where),)


def _turns(obj: dict[str, Any], key: str, where: str, n: int) -> tuple[int, ...]:
    items = _get(obj, key, list, where, [])
    if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < n for t in items):
        raise _Bad(f"{where}.{key}: must be a list of turns 0–{n - 1}")
    return tuple(items)


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
    users = [_user(_obj(u, f"users[{i}]"), f"users[{i}]", n) for i, u in enumerate(raw_users)]
    ids = [u.id for u in users]
    if len(set(ids)) != len(ids):
        raise _Bad(f"users: duplicate ids {sorted({x for x in ids if ids.count(x) > 1})}")
    return Scenario(_get(top, "name", str, "top level"), _get(top, "seed", int, "top level"),
                    tuple(users), n, dlen, _get(top, "split", str, "top level", ""))  # fmt: skip


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
            changes.append(Change(_at_turn(c, cw, n), _phrasings(c, cw), _turns(c, "restate_at", cw, n)))
        templates = _texts(p, "question_templates", pw)
        if not templates:
            raise _Bad(f"{pw}.question_templates: must be a non-empty list of non-empty strings")
        prefs.append(Preference(_get(p, "id", str, pw), _get(p, "domain", str, pw), _phrasings(p, pw), kind,
                                tuple(changes), templates, _turns(p, "restate_at", pw, n)))  # fmt: skip
    pids = [p.id for p in prefs]
    if len(set(pids)) != len(pids):
        raise _Bad(f"{where}.preferences: duplicate ids")
    moods = []
    for k, raw_mood in enumerate(_get(u, "moods", list, where, [])):
        mw = f"{where}.moods[{k}]"
        m = _obj(raw_mood, mw)
        period = _get(m, "period", str, mw, "day")
        if period not in PERIODS:
            raise _Bad(f"{mw}.period: must be one of {', '.join(PERIODS)}, got {period!r}")
        moods.append(Mood(_at_turn(m, mw, n), _get(m, "text", str, mw), period, _get(m, "type", str, mw, "mood"),
                          _get(m, "domain", str, mw, ""), _texts(m, "question_templates", mw, [])))  # fmt: skip
    secrets = []
    for k, raw_secret in enumerate(_get(u, "secrets", list, where, [])):
        sw = f"{where}.secrets[{k}]"
        s = _obj(raw_secret, sw)
        values = _texts(s, "values", sw)
        text = _get(s, "text", str, sw)
        if not values or any(v not in text for v in values):
            raise _Bad(f"{sw}.values: each value must occur in the text")
        secrets.append(Secret(_at_turn(s, sw, n), text, values))
    language = _get(u, "lang", str, where, None)
    return User(uid, tuple(prefs), tuple(moods), tuple(secrets), _texts(u, "chatter", where, []), language)


def shrink(sc: Scenario, users: int, turns: int) -> Scenario:
    """A smaller run of the same scenario: the first ``users`` users, ``turns`` turns each, with
    fixed turns scaled to fit, so every kind of event still happens."""

    def at(t: int) -> int:
        return min(turns - 1, round(t * turns / sc.turns_per_user))

    def change(c: Change) -> Change:
        return replace(c, at_turn=at(c.at_turn), restate_at=tuple(at(t) for t in c.restate_at))

    def pref(p: Preference) -> Preference:
        return replace(p, changes=tuple(change(c) for c in p.changes), restate_at=tuple(at(t) for t in p.restate_at))

    small = tuple(
        replace(u, preferences=tuple(pref(p) for p in u.preferences),
                moods=tuple(replace(m, at_turn=at(m.at_turn)) for m in u.moods),
                secrets=tuple(replace(s, at_turn=at(s.at_turn)) for s in u.secrets))
        for u in sc.users[:users]
    )  # fmt: skip
    return replace(sc, name=f"{sc.name}-{len(small)}x{turns}", users=small, turns_per_user=turns)
