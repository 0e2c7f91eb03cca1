"""A variant of the runtime, as ``tianma experiment`` names it: ``NAME=ITEM[,ITEM…]``.

Each ``ITEM`` is either a slot filled by another implementation — ``rerank:rerank_mmr``,
``retrieve:my_pkg.search:retrieve`` (an entry-point name or an import path, as
``nodes.<slot>`` takes) — or a setting — ``retrieval.min_relevance=0.1`` (the value read as JSON
when it is JSON: numbers, ``true``, ``null``; else as text). A variant is settings overrides, so
whatever the benchmarks build a runtime from, a variant changes in the same way; the baseline is
the variant without items.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tianma.errors import InvalidInputError
from tianma.settings import NODE_NAMES, REFLECTION_SLOTS, load_settings

BASELINE = "baseline"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


@dataclass(frozen=True)
class Variant:
    """A named set of settings overrides; ``items`` as written, for the report."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    items: tuple[str, ...] = ()

    def settings(self, base: dict[str, Any] | None = None) -> dict[str, Any]:
        """``base`` settings (as ``Settings(**…)`` takes them) with this variant's overrides on top."""
        return merged_settings(base or {}, self.overrides)


def parse_variant(spec: str) -> Variant:
    """``NAME=ITEM[,ITEM…]`` as a :class:`Variant` whose overrides the settings accept.

    Raises:
        InvalidInputError: the spec is malformed, names an unknown slot, or sets a setting that
            does not exist or takes no such value (the message names the item).
    """
    name, sep, rest = spec.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name) or not rest.strip():
        raise InvalidInputError(f"variant {spec!r}: write NAME=slot:implementation[,setting=value…] "
                                "/ 变体格式：名称=槽位:实现[,设置=值]")  # fmt: skip
    if name == BASELINE:
        raise InvalidInputError(f"variant {spec!r}: {BASELINE!r} is the runtime as configured, name yours otherwise")
    overrides: dict[str, Any] = {}
    items = tuple(x.strip() for x in rest.split(",") if x.strip())
    for item in items:
        overrides = merged_settings(overrides, _override(spec, item))
    try:
        load_settings(**overrides)
    except Exception as exc:  # ConfigError and friends: say which variant
        raise InvalidInputError(f"variant {name}: {exc}") from exc
    return Variant(name, overrides, items)


def _override(spec: str, item: str) -> dict[str, Any]:
    path, eq, value = item.partition("=")
    if eq:
        keys = [k.strip() for k in path.split(".")]
        if len(keys) < 2 or not all(keys):
            raise InvalidInputError(f"variant {spec!r}: {item!r} — a setting is section.name=value")
        out: dict[str, Any] = {keys[-1]: _value(value.strip())}
        for key in reversed(keys[:-1]):
            out = {key: out}
        return out
    slot, colon, impl = item.partition(":")
    if not colon or not impl.strip():
        raise InvalidInputError(f"variant {spec!r}: {item!r} — write slot:implementation or section.name=value")
    slot = slot.strip()
    if slot.startswith("reflection.") and slot.removeprefix("reflection.") in REFLECTION_SLOTS:
        return {"nodes": {"reflection": {slot.removeprefix("reflection."): impl.strip()}}}
    if slot not in NODE_NAMES:
        known = [*NODE_NAMES, *(f"reflection.{s}" for s in REFLECTION_SLOTS)]
        raise InvalidInputError(f"variant {spec!r}: no slot {slot!r}; slots: {', '.join(known)}")
    return {"nodes": {slot: impl.strip()}}


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def merged_settings(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, section by section (nested dicts merged, other values replaced)."""
    out = dict(base)
    for key, value in top.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merged_settings(out[key], value) if both else value
    return out
