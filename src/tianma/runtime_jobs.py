"""The runtime's side of the job queue: which work goes to the store's job table, and how each
kind of queued job is run (:class:`tianma.queue_worker.QueueWorker`).

With the job table in use (``learning.queue``; PostgreSQL by default), a turn's reflection and
the per-user part of every periodic job wait in it for any process to take: the scheduler
(:mod:`tianma.scheduler`, in ``serve`` or ``tianma jobs due``) claims its slot once across all
processes and enqueues one job per user, and ``tianma worker`` processes (and a thread of each
``serve``) run them. An import's learning (day summaries, then rules-only reflection over the
old windows) can be queued the same way. Every kind is keyed per user (``decay:<user>``), so an
ask while one waits joins it, and none runs twice at once for one user; every handler is safe to
run again after a crash (decay counts its periods from the last decay, aggregation archives what
it read, a reflection starts where the last one ended, an import resumes from its runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from tianma.queue_worker import Handler
from tianma.settings import Settings
from tianma.storage import job_queue as q
from tianma.storage.schema import utcnow

if TYPE_CHECKING:
    from tianma.runtime import Runtime

REFLECTION = "reflection"
DECAY = "decay"
AGGREGATE = "aggregate"
REVIEW = "behaviour_review"
IMPORT = "import"
KINDS = (REFLECTION, DECAY, AGGREGATE, REVIEW, IMPORT)


def uses_job_table(settings: Settings, engine: Engine) -> bool:
    """Whether queued work waits in the store's job table (``learning.queue``)."""
    queue = settings.learning.queue
    return queue == "database" or (queue == "auto" and engine.dialect.name == "postgresql")


def enqueue_user_job(engine: Engine, kind: str, user_id: str, payload: dict[str, Any], key: str | None = None) -> None:
    """Ask for one job of ``kind`` for ``user_id``; joins a pending one of the same key
    (default ``<kind>:<user>``). Due now by the clock, whatever time the payload speaks of."""
    q.enqueue(engine, kind, key or f"{kind}:{user_id}", {"user_id": user_id, **payload}, user_id=user_id, at=utcnow())


def enqueue_reflection(engine: Engine, user_id: str, at: datetime, trigger: str) -> None:
    """Ask for a reflection of ``user_id`` as of ``at``; joins one of theirs that waits (a turn
    may be dated in the past or future: the job is still due now)."""
    enqueue_user_job(engine, REFLECTION, user_id, {"at": at.isoformat(), "trigger": trigger})


def fan_out(engine: Engine, kind: str, users: Iterable[str], at: datetime, **extra: Any) -> int:
    """One job of ``kind`` as of ``at`` for each of ``users`` (a periodic job's slot); how many."""
    n = 0
    for user_id in users:
        enqueue_user_job(engine, kind, user_id, {"at": at.isoformat(), **extra})
        n += 1
    return n


def enqueue_import(engine: Engine, user_id: str, tag: str, start: datetime, end: datetime, days: list[date]) -> None:
    """Queue the learning of one import (``tianma import`` after its turns are stored): summaries
    of ``days``, then the reflections over the windows from ``start`` to ``end``."""
    payload = {"tag": tag, "start": start.isoformat(), "end": end.isoformat(), "days": [d.isoformat() for d in days]}
    enqueue_user_job(engine, IMPORT, user_id, payload, key=f"{IMPORT}:{user_id}:{tag}")


def _at(payload: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(payload["at"]))


def runtime_handlers(rt: Runtime) -> dict[str, Handler]:
    """How a runtime runs each kind of queued job; what each returns is kept as its result."""

    def reflection(p: dict[str, Any]) -> dict[str, Any]:
        (report,) = rt.reflect(str(p["user_id"]), at=_at(p), trigger=str(p.get("trigger", "queued")))
        return {"run_id": report.run_id}

    def decay(p: dict[str, Any]) -> dict[str, Any]:
        return {"run_ids": [r.run_id for r in rt.maintain(_at(p), user_id=str(p["user_id"]))]}

    def aggregate(p: dict[str, Any]) -> dict[str, Any]:
        reports = rt.aggregate_signals(_at(p), user_id=str(p["user_id"]))
        return {"merged": sum(len(r.merged) for r in reports), "archived": sum(r.archived for r in reports)}

    def review(p: dict[str, Any]) -> dict[str, Any]:
        reports = rt.weekly_review(str(p["user_id"]), _at(p))
        return {"proposals": sum(1 for r in reports for x in r.proposals if x.status == "queued")}

    def learn_import(p: dict[str, Any]) -> dict[str, Any]:
        importer, user_id, tag = rt.importer(), str(p["user_id"]), str(p["tag"])
        importer.summarise(user_id, [date.fromisoformat(str(d)) for d in p.get("days", ())])
        windows = importer.windows(user_id, datetime.fromisoformat(str(p["start"])),
                                   datetime.fromisoformat(str(p["end"])), tag)  # fmt: skip
        run_ids = [importer.reflect(user_id, w, tag).run_id for w in windows]
        return {"windows": len(windows), "run_ids": run_ids}

    handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
        REFLECTION: reflection, DECAY: decay, AGGREGATE: aggregate, REVIEW: review, IMPORT: learn_import,
    }  # fmt: skip
    return dict(handlers)
