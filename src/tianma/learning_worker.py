"""Learning off the request path: a turn asks, a background thread reflects (and summarises).

A turn that makes a reflection due (N dialogues, M messages, a negative signal) used to run it
before returning, so the reply's last chunk waited for the model's structured call — on a NAS
model, for the whole reflection. Under ``tianma serve`` the turn only submits the user here; one
worker thread runs the reflections one at a time, in the order users were submitted, and a user
submitted again while waiting is not queued twice (the later time and every trigger are kept,
one run covers them all: it reflects on everything since the user's last run anyway). The
rolling summary of a long dialogue is folded here too (:meth:`ReflectionWorker.submit_task`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from tianma.telemetry.spans import tracer

logger = logging.getLogger("tianma.learning")


@dataclass
class _Pending:
    at: datetime | None = None
    triggers: list[str] = field(default_factory=list)
    task: Callable[[], object] | None = None
    """Another kind of learning work (the rolling summary of a dialogue)."""


class ReflectionWorker:
    """One background thread that runs submitted reflections one at a time."""

    def __init__(self, reflect: Callable[[str, datetime, str], object], warm: Callable[[], object] | None = None) -> None:
        """``reflect(user_id, at, trigger)`` runs one reflection (``Runtime.reflect``); ``warm``
        runs first, in the worker thread (one-time costs a reflection would otherwise pay under
        the memory lock)."""
        self._reflect = reflect
        self._warm = warm
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._running: str | None = None
        self._stopping = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="tianma-reflection", daemon=True)
        self._thread.start()

    def submit(self, user_id: str, at: datetime, trigger: str) -> None:
        """Ask for a reflection of ``user_id``; coalesced with one already waiting."""
        with self._cv:
            if self._stopping:
                return
            waiting = self._pending.get(user_id)
            if waiting is None or waiting.at is None:
                self._pending[user_id] = _Pending(at, [trigger])
            else:
                waiting.at = max(waiting.at, at)
                if trigger not in waiting.triggers:
                    waiting.triggers.append(trigger)
            self._cv.notify_all()

    def submit_task(self, key: str, task: Callable[[], object]) -> None:
        """Run ``task`` in the worker; one already waiting under ``key`` is replaced by it."""
        with self._cv:
            if not self._stopping:
                self._pending[key] = _Pending(task=task)
                self._cv.notify_all()

    def pending(self) -> list[str]:
        """Users waiting for a reflection, in order (the one running is not listed)."""
        with self._cv:
            return list(self._pending)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing waits or runs; False when ``timeout`` passed first."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._pending and self._running is None, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Stop taking work, drop what waits, let the running reflection finish (up to ``timeout``)."""
        with self._cv:
            self._stopping = True
            dropped = list(self._pending)
            self._pending.clear()
            self._cv.notify_all()
        if dropped:
            logger.info("reflections not run at shutdown (they run at the next trigger): %s", ", ".join(dropped))
        self._thread.join(timeout)

    def _loop(self) -> None:
        if self._warm is not None:
            try:
                self._warm()
            except Exception:
                logger.exception("warming the reflection worker failed")
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._pending or self._stopping)
                if self._stopping:
                    return
                user_id, job = self._pending.popitem(last=False)
                self._running = user_id
            try:
                if job.task is not None:
                    with tracer.start_as_current_span("tianma.learning.background") as span:
                        span.set_attribute("tianma.learning.task", user_id)
                        job.task()
                elif job.at is not None:
                    with tracer.start_as_current_span("tianma.reflection.background") as span:
                        span.set_attribute("tianma.user.id", user_id)
                        span.set_attribute("tianma.reflection.triggers", job.triggers)
                        self._reflect(user_id, job.at, "+".join(job.triggers)[:32])  # the column holds 32
            except Exception:  # a failed run must not stop the worker; the next trigger retries
                logger.exception("background learning work %s failed", user_id)
            finally:
                with self._cv:
                    self._running = None
                    self._cv.notify_all()
