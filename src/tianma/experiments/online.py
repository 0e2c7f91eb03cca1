"""Online experiments: each user (or dialogue) is served by one arm, chosen by a stable hash.

An experiment is started and stopped in the store (:mod:`tianma.storage.experiments`), so every
``serve`` process and the CLI see the same one, and stopping it is one command that takes
effect at the next turn without a restart. Arms are variants (:mod:`tianma.experiments.variants`)
beside an implicit ``baseline``; an arm changes which implementation fills a slot and any
setting a turn reads. Nothing is learnt per arm: memory is the user's, whichever arm served the
turn, so stopping loses nothing. Exploration (ε-greedy) stays per strategy, inside each arm.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine

from tianma.experiments.variants import BASELINE, merged_settings, parse_variant
from tianma.settings import Settings, load_settings
from tianma.storage import experiments
from tianma.storage.experiments import Experiment

G = TypeVar("G")
D = TypeVar("D")


def arm_names(arms: Sequence[str]) -> list[str]:
    """The baseline, then the experiment's arms in name order: the order :func:`assign` uses."""
    return [BASELINE, *sorted(arms)]


def assign(experiment: str, unit_key: str, names: Sequence[str]) -> str:
    """The arm of ``unit_key`` (a user id, or user and dialogue) in ``experiment``: the same
    every time, evenly spread, and independent between experiments (the name is hashed in)."""
    digest = hashlib.sha256(f"{experiment}\x00{unit_key}".encode()).digest()
    return names[int.from_bytes(digest[:8], "big") % len(names)]


POLL_S = 5.0
"""How often a runtime looks in the store for the running experiment (a start or stop takes
effect within this, in every process)."""


@dataclass(frozen=True, slots=True)
class Pick(Generic[G, D]):
    """What serves one turn: the experiment and arm (None outside an experiment), its graph and deps."""

    experiment: str | None
    arm: str | None
    graph: G
    deps: D


class LiveArms(Generic[G, D]):
    """The arms of the running experiment, built once each, for the turns of one runtime.

    Args:
        engine: the store's engine (the experiments table).
        settings: the runtime's settings; an arm's are these with its variant's overrides.
        baseline: the runtime's own graph and deps.
        build: graph and deps for an arm's settings (the runtime knows how).
    """

    def __init__(self, engine: Engine, settings: Settings, baseline: tuple[G, D],
                 build: Callable[[Settings], tuple[G, D]], poll_s: float = POLL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self._engine, self._settings, self._baseline, self._build = engine, settings, baseline, build
        self._poll_s, self._clock = poll_s, clock
        self._checked = -math.inf
        self._running: Experiment | None = None
        self._built: dict[tuple[str, str], tuple[G, D]] = {}
        self._lock = threading.Lock()

    def running(self) -> Experiment | None:
        """The running experiment, as last read from the store (at most :data:`POLL_S` ago)."""
        with self._lock:
            if self._clock() - self._checked >= self._poll_s:
                self._running = experiments.running(self._engine)
                self._checked = self._clock()
            return self._running

    def refresh(self) -> None:
        """Read the store at the next turn (after a start or stop in this process)."""
        with self._lock:
            self._checked = -math.inf

    def pick(self, user_id: str, dialogue_id: str) -> Pick[G, D]:
        """The arm that serves this turn, and what it runs."""
        exp = self.running()
        if exp is None:
            return Pick(None, None, *self._baseline)
        key = user_id if exp.unit == "user" else f"{user_id}\x00{dialogue_id}"
        arm = assign(exp.name, key, arm_names(list(exp.arms)))
        if arm == BASELINE:
            return Pick(exp.name, arm, *self._baseline)
        with self._lock:
            built = self._built.get((exp.name, arm))
            if built is None:
                variant = parse_variant(f"{arm}={','.join(exp.arms[arm])}")
                built = self._build(arm_settings(self._settings, variant.overrides))
                self._built[(exp.name, arm)] = built
        return Pick(exp.name, arm, *built)


def arm_settings(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """``settings`` with an arm's overrides on top (validated as any settings are)."""
    return load_settings(**merged_settings(settings.model_dump(), overrides))
