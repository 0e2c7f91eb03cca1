"""Jobs from the store's job queue (:mod:`tianma.storage.job_queue`), run one at a time: a thread
beside ``tianma serve`` on PostgreSQL, or ``tianma worker`` processes on the same database.

A job is claimed under a lease that a heartbeat renews while it runs (a reflection on a CPU model
may take minutes); a job that raises is put back with a backoff. Handlers by kind: a
``reflection`` job reflects on its user (:meth:`tianma.runtime.Runtime.reflect`), as of the time
and with the triggers of the latest ask it joined.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from tianma.storage import job_queue as q
from tianma.storage.schema import utcnow
from tianma.telemetry.spans import tracer

logger = logging.getLogger("tianma.jobs")

Handler = Callable[[dict[str, Any]], object]
"""Runs one job from its payload; what it returns is kept as the job's result when it is a dict."""


def worker_name(role: str) -> str:
    """``host:pid:role``: who holds a job, in ``jobs.worker``."""
    return f"{socket.gethostname()}:{os.getpid()}:{role}"


class QueueWorker:
    """Takes jobs of the handled kinds from the queue and runs them, one at a time."""

    def __init__(self, engine: Engine, handlers: Mapping[str, Handler], *, name: str,
                 lease: timedelta = q.LEASE, poll: float = 1.0, now: Callable[[], datetime] = utcnow) -> None:  # fmt: skip
        self._engine = engine
        self._handlers = dict(handlers)
        self.name = name
        self._lease = lease
        self._poll = poll
        self._now = now
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> q.Job | None:
        """Claim one due job, run it, finish or fail it; ``None`` when nothing was due."""
        job = q.claim(self._engine, self.name, self._now(), kinds=tuple(self._handlers), lease=self._lease)
        if job is None:
            return None
        beat = threading.Event()
        heart = threading.Thread(target=self._heartbeat, args=(job, beat), name="tianma-job-lease", daemon=True)
        heart.start()
        try:
            with tracer.start_as_current_span("tianma.job") as span:
                span.set_attribute("tianma.job.kind", job.kind)
                span.set_attribute("tianma.job.attempt", job.attempts)
                if job.user_id is not None:
                    span.set_attribute("tianma.user.id", job.user_id)
                out = self._handlers[job.kind](job.payload)
        except Exception as exc:  # a failed job must not stop the worker; it is retried later
            logger.exception("job %s (%s) failed", job.id, job.kind)
            beat.set()
            heart.join()
            q.fail(self._engine, job, self._now(), f"{exc.__class__.__name__}: {exc}")
            return job
        beat.set()
        heart.join()
        if not q.finish(self._engine, job, self._now(), out if isinstance(out, dict) else None):
            logger.warning("job %s finished after its lease passed to another worker", job.id)
        return job

    def drain(self) -> int:
        """Run due jobs until none is left; how many ran (``tianma worker --once``)."""
        ran = 0
        while not self._stop.is_set() and self.run_once() is not None:
            ran += 1
        return ran

    def start(self) -> None:
        """Run in a background thread until :meth:`close`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tianma-jobs", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """A job was just enqueued here: look now instead of at the next poll."""
        self._wake.set()

    def run_forever(self) -> None:
        """Run in this thread until :meth:`close` (``tianma worker``)."""
        self._loop()

    def close(self, timeout: float = 30.0) -> None:
        """Stop after the running job (up to ``timeout``)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.drain()
            except Exception:  # the database went away for a moment: try again at the next poll
                logger.exception("taking jobs failed")
            self._wake.wait(self._poll)
            self._wake.clear()

    def _heartbeat(self, job: q.Job, done: threading.Event) -> None:
        """Renew the lease every third of it while the job runs."""
        every = self._lease.total_seconds() / 3
        while not done.wait(every):
            try:
                if not q.renew(self._engine, job, self._now(), self._lease):
                    logger.warning("job %s: the lease passed to another worker", job.id)
                    return
            except Exception:
                logger.exception("renewing the lease of job %s failed", job.id)
