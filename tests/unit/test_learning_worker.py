"""The background reflection worker: one run at a time, users coalesced, failures survived."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from tianma.learning_worker import ReflectionWorker

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_user_submitted_while_waiting_runs_once_with_every_trigger() -> None:
    gate, runs = threading.Event(), []

    def reflect(user_id: str, at: datetime, trigger: str) -> None:
        gate.wait(5)
        runs.append((user_id, at, trigger))

    worker = ReflectionWorker(reflect)
    worker.submit("a", T0, "messages")  # starts and blocks on the gate
    assert worker.wait_idle(0.05) is False
    worker.submit("b", T0, "dialogues")
    worker.submit("b", T0 + timedelta(minutes=5), "negative")
    worker.submit("c", T0, "messages")
    assert worker.pending() == ["b", "c"]
    gate.set()
    assert worker.wait_idle(5)
    assert runs == [("a", T0, "messages"), ("b", T0 + timedelta(minutes=5), "dialogues+negative"), ("c", T0, "messages")]
    worker.close()


def test_a_failing_reflection_does_not_stop_the_worker() -> None:
    runs: list[str] = []

    def reflect(user_id: str, at: datetime, trigger: str) -> None:
        runs.append(user_id)
        if user_id == "bad":
            raise RuntimeError("model gone")

    worker = ReflectionWorker(reflect)
    worker.submit("bad", T0, "messages")
    worker.submit("good", T0, "messages")
    assert worker.wait_idle(5) and runs == ["bad", "good"]
    worker.close()


def test_close_lets_the_running_one_finish_and_drops_the_rest() -> None:
    started, gate, done = threading.Event(), threading.Event(), []

    def reflect(user_id: str, at: datetime, trigger: str) -> None:
        started.set()
        gate.wait(5)
        done.append(user_id)

    worker = ReflectionWorker(reflect)
    worker.submit("a", T0, "messages")
    assert started.wait(5)
    worker.submit("b", T0, "messages")
    threading.Timer(0.1, gate.set).start()
    worker.close(timeout=5)
    assert done == ["a"]
    worker.submit("c", T0, "messages")  # after close: ignored
    assert worker.pending() == []
