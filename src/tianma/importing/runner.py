"""The import's steps over one runtime: store turns, summarise days, reflect over old windows.

Each step is small and resumable on its own — a stored message is found by its source id, a
day summary by its day, a reflected window by its run — so ``tianma import`` calls them in
turn (here, or inside ``tianma serve`` through the admin API) and an interrupted import run
again continues where it stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from tianma.guardrails.constitution import Constitution
from tianma.importing.days import DaysDone, summarise_days
from tianma.importing.pipeline import Stored, store_turns
from tianma.importing.turns import ImportTurn
from tianma.memory.search import AnchorCache
from tianma.memory.service import Memory
from tianma.results import ReflectionReport
from tianma.settings import Settings
from tianma.storage.imported import reflected_until, user_message_times
from tianma.storage.schema import utcnow

WINDOW_MESSAGES = 180
"""User messages per reflection window (a reflection reads at most 200)."""


@dataclass(frozen=True, slots=True)
class Window:
    """Old messages one rules-only reflection covers: after ``since`` up to ``until``."""

    since: datetime | None
    until: datetime
    messages: int


def trigger_of(tag: str) -> str:
    """The reflection trigger of one import's windows (the runs are found by it to resume)."""
    return f"import:{tag}"[:32]


@dataclass(frozen=True)
class Importer:
    """An import's steps over one runtime's memory (:meth:`tianma.Runtime.importer`)."""

    memory: Memory
    anchors: AnchorCache
    settings: Settings
    constitution: Constitution
    lock: threading.RLock
    reflect_window: Callable[[str, datetime | None, datetime, str], ReflectionReport]

    def store(self, user_id: str, turns: Sequence[ImportTurn], tag: str) -> Stored:
        """Screen and record a batch of turns (oldest first) of the import ``tag``."""
        return store_turns(self.memory, self.anchors, self.settings, self.constitution, self.lock, user_id, turns,
                           tag)  # fmt: skip

    def summarise(self, user_id: str, days: Sequence[date]) -> DaysDone:
        """Write or refresh the day summaries of ``days``."""
        return summarise_days(self.memory, self.settings.zone, self.lock, user_id, days, utcnow())

    def windows(self, user_id: str, start: datetime, end: datetime, tag: str) -> list[Window]:
        """The reflection windows over the user's messages from ``start`` to ``end`` that this
        import (``tag``) has not reflected on yet, oldest first."""
        done = reflected_until(self.memory.store, user_id, trigger_of(tag))
        times = [x for x in user_message_times(self.memory.store, user_id, start, end) if done is None or x > done]
        out: list[Window] = []
        since = done if done is not None else start - timedelta(microseconds=1)
        for first in range(0, len(times), WINDOW_MESSAGES):
            chunk = times[first : first + WINDOW_MESSAGES]
            until = chunk[-1]
            if out and until == out[-1].until:  # messages of one instant belong to one window
                continue
            out.append(Window(since, until, len(chunk)))
            since = until
        return out

    def reflect(self, user_id: str, window: Window, tag: str) -> ReflectionReport:
        """Reflect, rules only, on one window (as of its end)."""
        return self.reflect_window(user_id, window.since, window.until, trigger_of(tag))
