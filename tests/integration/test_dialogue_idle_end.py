"""Dialogues end after ``serve.dialogue_idle_minutes`` without a turn: under ``tianma serve``
(the reflection goes to the background worker) and without it (cron's ``tianma jobs due``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel, is_reflection_prompt
from tianma import Runtime
from tianma.scheduler import Scheduler
from tianma.serve import create_app
from tianma.storage import job_runs
from tianma.storage import schema as t
from tianma.testing.ollama_standin import OllamaStandin
from tianma.testing.server import ServerThread

T0 = datetime(2026, 3, 4, 9, tzinfo=UTC)
MODEL = "qwen2.5:7b"
GOOD = '{"new_facts": [], "supported": [], "contradicted": [], "strategies": []}'


class Clock:
    """The time every ``as_aware(None)`` (a served turn's time) sees; tests move it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock(T0)
    monkeypatch.setattr(t, "utcnow", fake)
    return fake


def reflections(rt: Runtime, user_id: str) -> list[tuple[str, datetime]]:
    """(trigger, time it ran as) of each reflection run of the user, oldest first."""
    r = t.reflection_runs.c
    with rt.memory.store.engine.connect() as conn:
        rows = conn.execute(
            select(r.trigger, r.started_at).where(r.user_id == user_id).order_by(r.started_at)
        ).all()
    return [(row.trigger, t.as_aware(row.started_at)) for row in rows]


def ended_at(rt: Runtime, dialogue_id: str) -> datetime | None:
    with rt.memory.store.engine.connect() as conn:
        value = conn.execute(select(t.dialogues.c.ended_at).where(t.dialogues.c.id == dialogue_id)).scalar()
    return None if value is None else t.as_aware(value)


@pytest.fixture
def served(
    make_runtime: RuntimeFactory, ollama_standin: OllamaStandin, clock: Clock
) -> Iterator[tuple[str, Runtime]]:
    rt = make_runtime(
        chat_model=ScriptedChatModel(replies=[GOOD]), embedder=CharacterEmbedder(),
        ollama={"base_url": ollama_standin.base_url}, learning={"every_dialogues": 1},
        serve={"dialogue_idle_minutes": 30},
    )  # fmt: skip
    with ServerThread(create_app(rt, scheduler=False)) as url:
        yield url, rt


def say(url: str, conversation: str, messages: list[dict[str, str]]) -> str:
    """One chat request of an Ollama client; returns the dialogue id tianma gave it."""
    r = httpx.post(f"{url}/api/chat", headers={"X-Tianma-Dialogue": conversation}, timeout=30,
                   json={"model": MODEL, "stream": False, "messages": messages})  # fmt: skip
    assert r.status_code == 200, r.text
    return r.headers["x-tianma-dialogue-id"]


def test_under_serve_an_idle_dialogue_ends_once_and_its_reflection_runs_in_the_worker(
    served: tuple[str, Runtime], clock: Clock, spans: InMemorySpanExporter
) -> None:
    url, rt = served
    first = [{"role": "user", "content": "我家的猫叫年糕"}]
    idle = say(url, "chat-1", first)
    clock.now = T0 + timedelta(minutes=2)
    history = [
        *first,
        {"role": "assistant", "content": "你说：我家的猫叫年糕"},
        {"role": "user", "content": "它三岁了"},
    ]
    assert say(url, "chat-1", history) == idle
    clock.now = T0 + timedelta(minutes=20)
    recent = say(url, "chat-2", [{"role": "user", "content": "推荐一本书"}])
    assert reflections(rt, "me") == []  # two open dialogues, nothing finished yet

    scheduler = Scheduler(rt, clock=clock)
    clock.now = T0 + timedelta(minutes=33)  # chat-1: 31 minutes without a turn; chat-2: 13
    run = scheduler.run("dialogue_end")  # what serve's scheduler thread runs every minute
    assert run.status == "ok" and run.report["dialogue_ids"] == [idle]
    assert run.report["reflections"] == {"me": "dialogues"}  # the trigger fired …
    assert ended_at(rt, idle) == T0 + timedelta(minutes=32)  # … as of its last turn + 30 min, not now
    assert ended_at(rt, recent) is None  # the dialogue with a recent turn stays open
    worker = rt.start_background_learning()  # the one serve started (idempotent)
    assert worker.wait_idle(30)
    assert reflections(rt, "me") == [("dialogues", T0 + timedelta(minutes=32))]  # … and ran once
    background = [s for s in spans.get_finished_spans() if s.name == "tianma.reflection.background"]
    assert len(background) == 1  # in the worker, not in the scheduler's thread

    clock.now = T0 + timedelta(minutes=40)
    assert scheduler.run("dialogue_end").status == "idle"
    assert rt.end_dialogue(idle) is False  # ending it again does nothing again
    assert worker.wait_idle(30) and reflections(rt, "me") == [("dialogues", T0 + timedelta(minutes=32))]
    assert ended_at(rt, idle) == T0 + timedelta(minutes=32)


def test_serves_own_scheduler_thread_ends_it_within_a_poll_and_only_once(
    make_runtime: RuntimeFactory, ollama_standin: OllamaStandin, clock: Clock
) -> None:
    rt = make_runtime(
        chat_model=ScriptedChatModel(replies=[GOOD]), embedder=CharacterEmbedder(),
        ollama={"base_url": ollama_standin.base_url}, learning={"every_dialogues": 1},
        scheduler={"enabled_jobs": ["dialogue_end"]},
    )  # fmt: skip
    with ServerThread(create_app(rt, scheduler=True, scheduler_poll_s=0.05)) as url:
        # a turn at T0, long before the real clock the scheduler thread reads
        dialogue = say(url, "chat-1", [{"role": "user", "content": "我家的猫叫年糕"}])
        deadline = time.monotonic() + 20
        while ended_at(rt, dialogue) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ended_at(rt, dialogue) == T0 + timedelta(minutes=30)
        time.sleep(0.5)  # ten more polls
        assert rt.start_background_learning().wait_idle(30)
        assert [trigger for trigger, _ in reflections(rt, "me")] == ["dialogues"]
        assert len(job_runs.runs(rt.memory.store.engine, "dialogue_end")) == 1  # idle polls leave no row


def test_without_serve_the_job_ends_idle_dialogues_and_reflects_in_the_call(
    make_runtime: RuntimeFactory,
) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), chat_model=ScriptedChatModel(replies=[GOOD]),
                      learning={"every_dialogues": 2}, serve={"dialogue_idle_minutes": 10})  # fmt: skip
    for n in range(3):  # three dialogues of one user, ten minutes apart
        rt.chat("u", f"第{n}个问题", dialogue_id=f"d{n}", at=T0 + timedelta(minutes=10 * n))
    rt.chat("v", "别的用户", dialogue_id="v1", at=T0)
    sweep = rt.end_idle_dialogues(T0 + timedelta(minutes=25))
    assert [(d.dialogue_id, d.ended_at) for d in sweep.ended] == [
        ("d0", T0 + timedelta(minutes=10)), ("v1", T0 + timedelta(minutes=10)), ("d1", T0 + timedelta(minutes=20)),
    ]  # fmt: skip
    assert sweep.triggered == (("u", "dialogues"),)  # two finished: one reflection, as of the later end
    assert reflections(rt, "u") == [("dialogues", T0 + timedelta(minutes=20))] and reflections(rt, "v") == []
    assert rt.end_idle_dialogues(T0 + timedelta(minutes=26)).ended == ()  # nothing twice
    assert ended_at(rt, "d2") is None

    rt.chat("u", "回到第一个对话", dialogue_id="d0", at=T0 + timedelta(minutes=40))  # reopens d0
    assert ended_at(rt, "d0") is None
    later = rt.end_idle_dialogues(T0 + timedelta(minutes=55))
    assert {(d.dialogue_id, d.ended_at) for d in later.ended} == {
        ("d2", T0 + timedelta(minutes=30)), ("d0", T0 + timedelta(minutes=50)),
    }  # fmt: skip
    assert [trigger for trigger, _ in reflections(rt, "u")] == ["dialogues", "dialogues"]


def test_a_dialogue_whose_turn_is_being_answered_is_not_ended(make_runtime: RuntimeFactory) -> None:
    entered, gate = threading.Event(), threading.Event()

    def slow(messages: Sequence[BaseMessage]) -> str:
        if is_reflection_prompt(messages):
            return GOOD
        if "慢" in str(messages[-1].content):
            entered.set()
            gate.wait(30)
        return "好的。"

    rt = make_runtime(embedder=CharacterEmbedder(), chat_model=ScriptedChatModel(responder=slow),
                      serve={"dialogue_idle_minutes": 30})  # fmt: skip
    rt.chat("u", "第一个问题", dialogue_id="d", at=T0)
    done: list[Any] = []
    answering = threading.Thread(
        target=lambda: done.append(rt.chat("u", "慢慢回答", dialogue_id="d", at=T0 + timedelta(minutes=29)))
    )
    answering.start()
    assert entered.wait(20)  # the model is answering; the turn is not recorded yet
    assert rt.end_idle_dialogues(T0 + timedelta(minutes=31)).ended == ()
    gate.set()
    answering.join(20)
    assert done and ended_at(rt, "d") is None
    [ended] = rt.end_idle_dialogues(T0 + timedelta(minutes=60)).ended
    assert ended.ended_at == T0 + timedelta(minutes=59)  # 30 minutes after the turn that was running
