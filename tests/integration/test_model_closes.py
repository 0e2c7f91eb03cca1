"""A change of mind the closing rules cannot see is closed on the reflection model's word, checked
against what the model was shown (tianma.memory.model_closes)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from langchain_core.messages import BaseMessage

from tests.conftest import RuntimeFactory
from tests.fakes import ScriptedChatModel, is_reflection_prompt
from tianma import Runtime
from tianma.turn import Turn

D0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LINUX = "我用Linux，装软件给我apt命令就行"
MAC = "上周末换了台MacBook Air，旧电脑给孩子了"
EMPTY = {"new_facts": [], "revised_preferences": [], "new_strategies": [], "deprecated_memories": []}


def _id_of(prompt: str, text: str, section: str) -> str:
    """The id the prompt gives ``text`` in the section that starts with ``section``."""
    part = prompt[prompt.index(section) :]
    return re.search(r"\[([^\]]+)\] \([^)]*\)(?: 用户:)? " + re.escape(text), part).group(1)  # type: ignore[union-attr]


def _model(answer: Callable[[str], list[dict[str, str]]]) -> ScriptedChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if not is_reflection_prompt(messages):
            return "好的。"
        return json.dumps({**EMPTY, "superseded_statements": answer(str(messages[-1].content))})

    return ScriptedChatModel(responder=respond)


def _said(rt: Runtime) -> tuple[Turn, Turn]:
    linux = rt.chat("u", LINUX, dialogue_id="a", at=D0)
    mac = rt.chat("u", MAC, dialogue_id="b", at=D0 + timedelta(days=3))
    assert rt.memory.store.get(linux.event_id).valid_until is None  # the rules did not see it
    return linux, mac


def _carried(turn: Turn) -> set[str]:
    return {e for m in (*turn.memories, *turn.resident) if m.superseded_by is None for e in m.source_event_ids}


def test_the_model_closes_what_the_rules_could_not_and_undo_reopens_it(make_runtime: RuntimeFactory) -> None:
    def answer(prompt: str) -> list[dict[str, str]]:
        return [{"statement_id": _id_of(prompt, LINUX, "statements that still hold"),
                 "by_event_id": _id_of(prompt, MAC, "recent messages")}]  # fmt: skip

    rt = make_runtime(chat_model=_model(answer), learning={"model_every_messages": 0})
    linux, mac = _said(rt)
    (report,) = rt.reflect("u", at=D0 + timedelta(days=4))

    closed = rt.memory.store.get(linux.event_id)
    assert closed.valid_until == D0 + timedelta(days=3) and closed.data["closed_by"] == mac.event_id
    assert closed.data["closed_as"] == "revised" and closed.content == LINUX  # the log keeps it
    assert report.counts.get("statement_closed") == 1
    (item,) = [i for i in report.items if i.outcome == "statement_closed"]
    assert item.target_id == linux.event_id and item.content == LINUX and item.source_event_ids == (mac.event_id,)
    turn = rt.chat("u", "怎么装Python？", dialogue_id="c", at=D0 + timedelta(days=5))
    assert mac.event_id in _carried(turn) and linux.event_id not in _carried(turn)

    assert linux.event_id in rt.undo_reflection(report.run_id)
    assert rt.memory.store.get(linux.event_id).valid_until is None


def test_answers_that_do_not_hold_up_close_nothing(make_runtime: RuntimeFactory) -> None:
    def answer(prompt: str) -> list[dict[str, str]]:
        linux = _id_of(prompt, LINUX, "statements that still hold")
        mac = _id_of(prompt, MAC, "recent messages")
        return [
            {"statement_id": "no-such-statement", "by_event_id": mac},  # never shown
            {"statement_id": mac, "by_event_id": linux},  # a message cannot close what came after it
            {"statement_id": linux, "by_event_id": "made-up"},  # not a message of the window
        ]

    rt = make_runtime(chat_model=_model(answer), learning={"model_every_messages": 0})
    linux, mac = _said(rt)
    (report,) = rt.reflect("u", at=D0 + timedelta(days=4))
    assert rt.memory.store.get(linux.event_id).valid_until is None
    assert rt.memory.store.get(mac.event_id).valid_until is None
    assert "statement_closed" not in report.counts and report.llm["ignored_items"] == 3


def test_the_prompt_shows_the_statements_that_still_hold(make_runtime: RuntimeFactory) -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> list[dict[str, str]]:
        prompts.append(prompt)
        return []

    rt = make_runtime(chat_model=_model(answer), learning={"model_every_messages": 0})
    linux, _ = _said(rt)
    rt.reflect("u", at=D0 + timedelta(days=4))
    (prompt,) = prompts
    held = prompt[prompt.index("statements that still hold") :]
    assert f"[{linux.event_id}] (2026-03-02) {LINUX}" in held and MAC in held


def test_a_later_statement_outside_the_window_may_close_an_earlier_one(make_runtime: RuntimeFactory) -> None:
    calls: list[str] = []

    def answer(prompt: str) -> list[dict[str, str]]:
        calls.append(prompt)
        if len(calls) == 1:
            return []  # the first look misses it
        held = "statements that still hold"
        assert MAC not in prompt[: prompt.index(held)]  # the second window holds neither statement
        return [{"statement_id": _id_of(prompt, LINUX, held), "by_event_id": _id_of(prompt, MAC, held)}]

    rt = make_runtime(chat_model=_model(answer), learning={"model_every_messages": 0})
    linux, mac = _said(rt)
    rt.reflect("u", at=D0 + timedelta(days=4))
    assert rt.memory.store.get(linux.event_id).valid_until is None
    rt.chat("u", "以后回答简短一点", dialogue_id="c", at=D0 + timedelta(days=6))
    rt.reflect("u", at=D0 + timedelta(days=7))
    closed = rt.memory.store.get(linux.event_id)
    assert len(calls) == 2 and closed.valid_until == D0 + timedelta(days=3) and closed.data["closed_by"] == mac.event_id
