"""The runtime's side of the job queue: which queue a reflection asked for by a turn goes to, and
how a queued reflection is run (:class:`tianma.queue_worker.QueueWorker`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from tianma.queue_worker import Handler
from tianma.settings import Settings
from tianma.storage import job_queue as q
from tianma.storage.schema import utcnow

REFLECTION = "reflection"


def uses_job_table(settings: Settings, engine: Engine) -> bool:
    """Whether asked-for reflections wait in the store's job table (``learning.queue``)."""
    queue = settings.learning.queue
    return queue == "database" or (queue == "auto" and engine.dialect.name == "postgresql")


def enqueue_reflection(engine: Engine, user_id: str, at: datetime, trigger: str) -> None:
    """Ask for a reflection of ``user_id`` as of ``at``; joins one of theirs that waits. The job
    is due now by the clock, whatever ``at`` says (a turn may be dated in the past or future)."""
    payload = {"user_id": user_id, "at": at.isoformat(), "trigger": trigger}
    q.enqueue(engine, REFLECTION, f"{REFLECTION}:{user_id}", payload, user_id=user_id, at=utcnow())


def reflection_handler(reflect: Callable[[str, datetime, str], Any]) -> dict[str, Handler]:
    """The handlers a runtime's queue worker runs: a queued reflection, as ``reflect(user_id, at,
    trigger)`` (``Runtime.reflect``'s one report), its run id kept as the job's result."""

    def run(payload: dict[str, Any]) -> dict[str, Any]:
        report = reflect(str(payload["user_id"]), datetime.fromisoformat(str(payload["at"])), str(payload["trigger"]))
        return {"run_id": getattr(report, "run_id", None)}

    return {REFLECTION: run}
