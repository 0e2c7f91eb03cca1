"""Reflections through the job table on PostgreSQL: a server's turn asks, a thread of the server
or a ``tianma worker`` process reflects — once, recorded in the table."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.conftest import RuntimeFactory
from tests.fakes import ScriptedChatModel
from tianma.runtime_jobs import enqueue_reflection
from tianma.storage import job_queue

T0 = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)
CLI = [sys.executable, "-c", "from tianma.cli import main; main()"]


def _wait(predicate, seconds: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_servers_turn_queues_the_reflection_and_its_thread_runs_it(make_runtime: RuntimeFactory, postgres_url: str) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的。"]), sql={"url": postgres_url},
                      learning={"every_messages": 2, "model_every_messages": 0})  # fmt: skip
    assert rt.job_table  # auto: PostgreSQL
    rt.start_background_learning()  # what tianma serve does
    future = datetime.now(UTC) + timedelta(days=30)  # a turn dated ahead: its reflection is still due now
    rt.chat("li", "以后回答先给结论。", dialogue_id="d1", at=future)
    rt.chat("li", "以后别用表情符号。", dialogue_id="d1", at=future + timedelta(minutes=1))
    engine = rt.store.engine
    _wait(lambda: job_queue.counts(engine).get("done", 0) == 1)
    (job,) = job_queue.jobs(engine)
    assert job["kind"] == "reflection" and job["user_id"] == "li" and job["attempts"] == 1
    assert job["result"]["run_id"] and job["worker"].endswith(":serve")


def test_tianma_worker_takes_what_a_server_queued(make_runtime: RuntimeFactory, postgres_url: str, tmp_path: Path) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的。"]), sql={"url": postgres_url}, name="home")
    rt.chat("li", "以后回答先给结论。", dialogue_id="d1", at=T0)
    enqueue_reflection(rt.store.engine, "li", T0 + timedelta(minutes=5), "messages")  # as a server would
    enqueue_reflection(rt.store.engine, "li", T0 + timedelta(minutes=6), "dialogues")  # joins the waiting one
    home = rt.settings.home
    rt.close()  # the embedded vector index is one process's at a time
    env = {**os.environ, "TIANMA_HOME": str(home), "TIANMA_SQL__URL": postgres_url, "TIANMA_EMBEDDER__THREADS": "1"}
    done = subprocess.run([*CLI, "worker", "--once"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 job(s) run, 0 waiting" in done.stdout
    again = make_runtime(sql={"url": postgres_url}, name="home")
    (job,) = job_queue.jobs(again.store.engine)
    assert job["status"] == "done" and job["payload"]["trigger"] == "dialogues" and job["worker"].endswith(":worker")
    assert job["result"]["run_id"]


def test_tianma_worker_on_sqlite_says_why_it_has_nothing_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "TIANMA_HOME": str(tmp_path / "home")}
    done = subprocess.run([*CLI, "worker", "--once"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "learning.queue" in done.stdout + done.stderr


def test_a_slots_per_user_work_is_queued_once_and_each_job_run_once(make_runtime: RuntimeFactory, postgres_url: str) -> None:
    from tianma.scheduler import Scheduler

    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的。"]), sql={"url": postgres_url},
                      learning={"auto_reflect": False})  # fmt: skip
    for user in ("li", "wang"):
        rt.chat(user, "以后回答先给结论。", dialogue_id=f"d-{user}", at=T0)
        rt.feedback(rt.chat(user, "推荐一本书", dialogue_id=f"d-{user}", at=T0 + timedelta(minutes=1)).event_id, "dislike")
    now = T0 + timedelta(days=1, hours=4)
    first, second = Scheduler(rt, clock=lambda: now), Scheduler(rt, clock=lambda: now)  # two processes' schedulers
    runs = {r.job: r for r in first.run_due()}
    assert all(r.status == "skipped" for r in second.run_due() if r.job != "dialogue_end")
    for name in ("decay", "aggregate", "reflection", "behaviour_review"):
        assert runs[name].status == "ok" and runs[name].report["queued"] and runs[name].report["users"] == 2
    engine = rt.store.engine
    waiting = sorted((j["kind"], j["user_id"]) for j in job_queue.jobs(engine) if j["status"] == "pending")
    assert waiting == sorted((k, u) for k in ("aggregate", "behaviour_review", "decay", "reflection") for u in ("li", "wang"))
    assert rt.queue_worker("test").drain() == 8
    done = {(j["kind"], j["user_id"]): j for j in job_queue.jobs(engine)}
    assert {j["status"] for j in done.values()} == {"done"} and all(j["attempts"] == 1 for j in done.values())
    assert done[("reflection", "li")]["payload"]["trigger"] == "nightly" and done[("reflection", "li")]["result"]["run_id"]
    assert set(done[("aggregate", "li")]["result"]) == {"merged", "archived"}
    assert all(r.seen == 0 for r in rt.aggregate_signals(now, user_id="li"))  # nothing left unread
    assert done[("decay", "wang")]["result"] == {"run_ids": []}  # a day old: nothing to forget yet
    finished = datetime.now(UTC)  # the worker's clock is the real one
    assert job_queue.prune(engine, finished + timedelta(days=6)) == 0  # kept a week to be looked at
    assert job_queue.prune(engine, finished + timedelta(days=8)) == 8 and job_queue.jobs(engine) == []
