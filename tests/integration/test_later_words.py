"""A resident statement the message is about is shown with what the user said later on its
subject, when the rules did not read that as a statement (tianma.memory.later_words)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from langchain_core.messages import BaseMessage

from tests.conftest import RuntimeFactory
from tests.fakes import ScriptedChatModel, is_reflection_prompt
from tianma import Runtime
from tianma.prompting import memory_block

D0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
HORROR = "以后给我推荐电影就推恐怖片，越吓人越好"
UNREAD_CHANGE = "恐怖片看多了晚上老睡不着，最近就想看点轻松的"  # no wish word the rules know


def broken(messages: Sequence[BaseMessage]) -> str:
    return '{"new_facts": [' if is_reflection_prompt(messages) else "好的。"


def day(n: int) -> datetime:
    return D0 + timedelta(days=n)


def told(rt: Runtime) -> tuple[str, str, str]:
    """The wish, a question about its subject, then the change the rules do not read."""
    wish = rt.chat("u", HORROR, dialogue_id="a", at=day(0))
    asked = rt.chat("u", "推荐一部电影", dialogue_id="b", at=day(1))
    change = rt.chat("u", UNREAD_CHANGE, dialogue_id="c", at=day(2))
    assert "statement" not in rt.memory.store.get(change.event_id).data  # the case this is for
    return wish.event_id, asked.event_id, change.event_id


def test_the_later_words_follow_the_statement_they_are_about(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(responder=broken)
    rt = make_runtime(chat_model=model)
    wish, asked, change = told(rt)
    turn = rt.chat("u", "周末想看部电影，有什么推荐？", dialogue_id="d", at=day(3))
    ids = [r.id for r in turn.resident]
    assert ids[ids.index(wish) + 1] == change  # right after the statement, with its provenance
    assert {r.id: r.later_on for r in turn.resident}[change] == wish
    assert asked not in ids  # a question states nothing
    prompt = str(model.prompts[-1][0].content)
    assert f"用户后来说 / the user later said（2026-03-04）：「{UNREAD_CHANGE}」" in prompt


def test_without_later_words_the_change_waits_for_the_search(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(responder=broken), retrieval={"later_words": False})
    wish, _, change = told(rt)
    turn = rt.chat("u", "周末想看部电影，有什么推荐？", dialogue_id="d", at=day(3))
    assert wish in {r.id for r in turn.resident} and change not in {r.id for r in turn.resident}


def test_a_later_row_reads_as_what_the_user_said_later() -> None:
    rows = [{"id": "s", "kind": "event", "content": "以后都推恐怖片", "at": day(0), "confidence": 1.0},
            {"id": "m", "kind": "event", "content": "I can't sleep after [scary] films", "at": day(2),
             "confidence": 1.0, "later_on": "s"}]  # fmt: skip
    block, count = memory_block([], rows, [], 15)
    assert count == 2
    assert "1. 用户说 / the user said（2026-03-02）：「以后都推恐怖片」" in block
    assert "2. 用户后来说 / the user later said（2026-03-04）：「I can't sleep after [scary] films」" in block


def test_a_long_paste_is_not_shown_as_later_words(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(responder=broken))
    wish = rt.chat("u", HORROR, dialogue_id="a", at=day(0))
    long = UNREAD_CHANGE + "。" + "那天晚上看完片子，我一个人在客厅里坐了很久，" * 60  # ~1,300 characters
    pasted = rt.chat("u", long, dialogue_id="b", at=day(2))
    assert "statement" not in rt.memory.store.get(pasted.event_id).data
    turn = rt.chat("u", "周末想看部电影，有什么推荐？", dialogue_id="c", at=day(3))
    ids = {r.id for r in turn.resident}
    assert wish.event_id in ids and pasted.event_id not in ids
