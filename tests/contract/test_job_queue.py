"""The job queue on a SQLite file and on PostgreSQL: asks for the same work join, one user's job
of a kind never runs twice at once, racing workers each take a job exactly once, a dead worker's
lease expires and its job is run again, failures back off and then stop."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from tianma.storage import job_queue as q
from tianma.storage.sql_store import SqlMemoryStore

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["file", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'q.db'}"


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    store = SqlMemoryStore.from_url(url)
    yield store.engine
    store.close()


def test_asks_for_the_same_work_join_the_waiting_job(engine: Engine) -> None:
    q.enqueue(engine, "reflection", "reflection:u", {"at": "1"}, user_id="u", at=T0)
    q.enqueue(engine, "reflection", "reflection:u", {"at": "2"}, user_id="u", at=T0 + timedelta(seconds=5))
    q.enqueue(engine, "reflection", "reflection:v", {"at": "1"}, user_id="v", at=T0 + timedelta(seconds=1))
    assert q.counts(engine) == {"pending": 2}
    first = q.claim(engine, "w1", T0 + timedelta(seconds=10))
    assert first is not None and first.user_id == "u" and first.payload == {"at": "2"} and first.attempts == 1
    assert q.claim(engine, "w1", T0 + timedelta(seconds=10)) is not None  # v's
    assert q.claim(engine, "w1", T0 + timedelta(seconds=10)) is None


def test_one_users_job_of_a_kind_never_runs_twice_at_once(engine: Engine) -> None:
    q.enqueue(engine, "reflection", "reflection:u", {"n": 1}, user_id="u", at=T0)
    running = q.claim(engine, "w1", T0)
    assert running is not None
    q.enqueue(engine, "reflection", "reflection:u", {"n": 2}, user_id="u", at=T0)  # asked again meanwhile
    q.enqueue(engine, "summary", "summary:u:d1", {}, user_id="u", at=T0)  # another kind may run
    other = q.claim(engine, "w2", T0)
    assert other is not None and other.kind == "summary"
    assert q.claim(engine, "w2", T0) is None  # u's reflection waits for the running one
    assert q.finish(engine, running, T0 + timedelta(seconds=1))
    again = q.claim(engine, "w2", T0 + timedelta(seconds=1))
    assert again is not None and again.payload == {"n": 2}


def test_racing_workers_take_each_job_exactly_once(url: str, engine: Engine) -> None:
    for i in range(60):
        q.enqueue(engine, "reflection", f"reflection:u{i}", {"i": i}, user_id=f"u{i}", at=T0)
    taken: Counter[int] = Counter()
    lock = threading.Lock()

    def work(name: str) -> None:
        own = SqlMemoryStore.from_url(url)  # a worker of its own, with its own connections
        try:
            while (job := q.claim(own.engine, name, T0 + timedelta(seconds=1))) is not None:
                with lock:
                    taken[job.payload["i"]] += 1
                assert q.finish(own.engine, job, T0 + timedelta(seconds=2))
        finally:
            own.close()

    workers = [threading.Thread(target=work, args=(f"w{n}",)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert sorted(taken) == list(range(60)) and set(taken.values()) == {1}
    assert q.counts(engine) == {"done": 60}


def test_a_dead_workers_lease_expires_and_its_job_runs_again(engine: Engine) -> None:
    q.enqueue(engine, "reflection", "reflection:u", {}, user_id="u", at=T0)
    dead = q.claim(engine, "w1", T0, lease=timedelta(minutes=1))
    assert dead is not None
    assert q.claim(engine, "w2", T0 + timedelta(seconds=30)) is None  # still leased
    assert q.renew(engine, dead, T0 + timedelta(seconds=30), lease=timedelta(minutes=1))
    assert q.claim(engine, "w2", T0 + timedelta(seconds=80)) is None  # renewed
    retried = q.claim(engine, "w2", T0 + timedelta(minutes=3))
    assert retried is not None and retried.id == dead.id and retried.attempts == 2
    assert not q.finish(engine, dead, T0 + timedelta(minutes=4))  # the dead worker's claim is gone
    assert q.finish(engine, retried, T0 + timedelta(minutes=4))
    assert q.counts(engine) == {"done": 1}


def test_an_expired_job_a_newer_ask_covers_is_dropped(engine: Engine) -> None:
    q.enqueue(engine, "reflection", "reflection:u", {"n": 1}, user_id="u", at=T0)
    assert q.claim(engine, "w1", T0, lease=timedelta(minutes=1)) is not None
    q.enqueue(engine, "reflection", "reflection:u", {"n": 2}, user_id="u", at=T0 + timedelta(seconds=10))
    job = q.claim(engine, "w2", T0 + timedelta(minutes=2))
    assert job is not None and job.payload == {"n": 2}
    assert q.counts(engine) == {"failed": 1, "running": 1}


def test_failures_back_off_then_stop(engine: Engine) -> None:
    q.enqueue(engine, "reflection", "reflection:u", {}, user_id="u", at=T0)
    now = T0
    waits = []
    for attempt in range(1, q.MAX_ATTEMPTS + 1):
        job = None
        while job is None:  # due only after its backoff
            job = q.claim(engine, "w", now)
            if job is None:
                now += timedelta(seconds=15)
        assert job.attempts == attempt
        waits.append(now)
        assert q.fail(engine, job, now, "model timed out")
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(waits)]
    assert gaps == sorted(gaps) and gaps[-1] >= 4 * gaps[0] > 0  # each wait at least as long as the last
    assert q.claim(engine, "w", now + timedelta(days=1)) is None
    (row,) = q.jobs(engine)
    assert row["status"] == "failed" and row["error"] == "model timed out" and row["attempts"] == q.MAX_ATTEMPTS


def test_forgetting_a_user_takes_their_jobs(engine: Engine) -> None:
    q.enqueue(engine, "reflection", "reflection:u", {"user_id": "u"}, user_id="u", at=T0)
    q.enqueue(engine, "reflection", "reflection:v", {"user_id": "v"}, user_id="v", at=T0)
    store = SqlMemoryStore(engine)
    store.delete("u")  # the whole user
    assert [j["user_id"] for j in q.jobs(engine)] == ["v"]
