"""No model call of learning holds the memory lock, and a turn never waits for a reflection."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from langchain_core.messages import BaseMessage

from tests.conftest import RuntimeFactory
from tests.fakes import ScriptedChatModel, is_reflection_prompt
from tianma.llm.summary import SUMMARY_PROMPT

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GOOD = '{"new_facts": [], "supported": [], "contradicted": [], "strategies": []}'


class Blocking:
    """A chat model whose learning calls (reflection, or the rolling summary) wait for a gate."""

    def __init__(self, which: str) -> None:
        self.which, self.entered, self.gate = which, threading.Event(), threading.Event()

    def __call__(self, messages: Sequence[BaseMessage]) -> str:
        learning = is_reflection_prompt(messages) if self.which == "reflection" else (
            str(messages[0].content) == SUMMARY_PROMPT)  # fmt: skip
        if not learning:
            return "好的。"
        self.entered.set()
        self.gate.wait(30)
        return GOOD if self.which == "reflection" else "{}"


def test_a_reflection_waiting_for_the_model_does_not_hold_other_turns(make_runtime: RuntimeFactory) -> None:
    model = Blocking("reflection")
    rt = make_runtime(chat_model=ScriptedChatModel(responder=model), learning={"model_every_messages": 0})
    rt.chat("a", "我不吃香菜", dialogue_id="a1", at=T0)
    reflecting = threading.Thread(target=rt.reflect, args=("a",), kwargs={"at": T0 + timedelta(hours=1)})
    reflecting.start()
    assert model.entered.wait(10)  # the reflection is now inside its model call
    done = threading.Event()
    threading.Thread(target=lambda: (rt.chat("b", "推荐一本书", dialogue_id="b1", at=T0), done.set())).start()
    assert done.wait(20), "another user's turn waited for the reflection's model call"
    assert rt.memories("b", kind="event")
    model.gate.set()
    reflecting.join(20)
    assert not reflecting.is_alive()


def test_the_rolling_summary_is_written_without_the_memory_lock(make_runtime: RuntimeFactory) -> None:
    model = Blocking("summary")
    rt = make_runtime(chat_model=ScriptedChatModel(responder=model), window={"turns": 2, "fold": 1},
                      learning={"auto_reflect": False})  # fmt: skip
    for n in range(2):
        rt.chat("a", f"第{n}个问题：怎么煮面？", dialogue_id="a1", at=T0 + timedelta(minutes=n))
    folding = threading.Thread(target=rt.chat, args=("a", "第三个问题：怎么煮饭？", "a1", T0 + timedelta(minutes=3)))
    folding.start()
    assert model.entered.wait(10)  # that turn is folding its window with the model
    done = threading.Event()
    threading.Thread(target=lambda: (rt.chat("b", "推荐一本书", dialogue_id="b1", at=T0), done.set())).start()
    assert done.wait(20), "another user's turn waited for a rolling summary"
    model.gate.set()
    folding.join(20)
    assert not folding.is_alive()


def test_with_background_learning_a_triggered_reflection_runs_after_the_turn(make_runtime: RuntimeFactory) -> None:
    model = Blocking("reflection")
    rt = make_runtime(chat_model=ScriptedChatModel(responder=model),
                      learning={"model_every_messages": 0, "every_messages": 2})  # fmt: skip
    worker = rt.start_background_learning()
    rt.chat("a", "我不吃香菜", dialogue_id="a1", at=T0)
    turn = rt.chat("a", "我对花生过敏", dialogue_id="a1", at=T0 + timedelta(minutes=1))  # makes one due
    assert turn.reflection_run_id is None  # returned without waiting …
    assert model.entered.wait(10)  # … while the reflection runs in the background
    model.gate.set()
    assert worker.wait_idle(20)
    assert [r for r in rt.memories("a") if r.kind == "fact"]  # and it learnt


def test_with_background_learning_a_turn_does_not_wait_for_its_own_summary(make_runtime: RuntimeFactory) -> None:
    model = Blocking("summary")
    rt = make_runtime(chat_model=ScriptedChatModel(responder=model), window={"turns": 2, "fold": 1},
                      learning={"auto_reflect": False})  # fmt: skip
    worker = rt.start_background_learning()
    for n in range(3):  # the third overflows the window
        rt.chat("a", f"第{n}个问题：怎么煮面？", dialogue_id="a1", at=T0 + timedelta(minutes=n))
    assert model.entered.wait(10)  # the fold is running in the background, the turn has returned
    after = rt.chat("a", "第四个问题：怎么煮饭？", dialogue_id="a1", at=T0 + timedelta(minutes=4))
    assert after.reply == "好的。"  # the next turn of the same dialogue did not wait either
    model.gate.set()
    assert worker.wait_idle(20)
    config = {"configurable": {"thread_id": "a\x1fa1"}}
    values = rt._graph.get_state(config).values  # type: ignore[arg-type]
    assert values.get("summary") and values.get("summary_turns", 0) >= 1
    texts = [str(m.content) for m in values["messages"]]
    assert "第四个问题：怎么煮饭？" in texts and "第0个问题：怎么煮面？" not in texts  # folded, newest kept
