"""Operations of ``tianma import``: each step of an import, run here or inside ``tianma serve``
(the server's runtime holds the vector index; the CLI sends the parsed turns in batches)."""

from __future__ import annotations

from datetime import date, datetime

from tianma.importing.days import DaysDone
from tianma.importing.pipeline import Stored
from tianma.importing.runner import Window
from tianma.importing.turns import ImportTurn
from tianma.operations.operation import Home, operation
from tianma.results import ReflectionReport


@operation("import.store")
def store(home: Home, user_id: str, turns: list[ImportTurn], tag: str) -> Stored:
    """Screen and record one batch of old turns (oldest first)."""
    return home.runtime().importer().store(user_id, turns, tag)


@operation("import.days")
def summarise(home: Home, user_id: str, days: list[date]) -> DaysDone:
    """Write or refresh the summaries of these days of imported history."""
    return home.runtime().importer().summarise(user_id, days)


@operation("import.windows")
def windows(home: Home, user_id: str, start: datetime, end: datetime, tag: str) -> list[Window]:
    """The reflection windows over the imported time this import has not learnt from yet."""
    return home.runtime().importer().windows(user_id, start, end, tag)


@operation("import.reflect")
def reflect(home: Home, user_id: str, window: Window, tag: str) -> ReflectionReport:
    """Learn, by the rules only, from one window of old messages."""
    return home.runtime().importer().reflect(user_id, window, tag)


@operation("import.queueable")
def queueable(home: Home) -> bool:
    """Whether this home leaves queued work to the job table (``learning.queue``)."""
    return home.runtime().job_table


@operation("import.queue")
def queue(home: Home, user_id: str, tag: str, start: datetime, end: datetime, days: list[date]) -> bool:
    """Leave the learning of a stored import (summaries, reflections) to the job table's workers;
    False when this home does not use the job table (``learning.queue``)."""
    rt = home.runtime()
    if not rt.job_table:
        return False
    rt.queue_import(user_id, tag, start, end, days)
    return True
