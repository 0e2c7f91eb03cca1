"""Forget, rebuild, failures, feedback and the short-term window through the runtime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma import ChatModelUnavailableError, InvalidInputError, RecordNotFoundError
from tianma.storage import schema as t

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def rows_of(rt, user_id: str) -> dict[str, int]:
    counts = {}
    with rt.memory.store.engine.connect() as conn:
        for table in (t.records, t.record_versions, t.injections, t.replace_log, t.dialogues):
            query = select(func.count()).select_from(table).where(table.c.user_id == user_id)
            counts[table.name] = conn.execute(query).scalar_one()
    return counts


def test_forget_everything_leaves_nothing_in_sql_index_or_window(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    first = rt.chat("u", "我住在杭州西湖区。", dialogue_id="d1", at=T0)
    rt.chat("u", "我住在哪里？", dialogue_id="d2", at=T0 + timedelta(days=1))
    rt.feedback(first.event_id, "like")
    rt.chat("keep", "我住在北京。", dialogue_id="k1", at=T0)
    assert rows_of(rt, "u")["records"] > 0

    deleted = rt.forget("u")

    assert deleted >= 3
    assert set(rows_of(rt, "u").values()) == {0}
    assert rt.memory.vectors.count("u") == 0 and rt.memory.keywords.count("u") == 0
    assert rt.search("u", "杭州", k=5) == []
    for dialogue in ("d1", "d2"):
        config = {"configurable": {"thread_id": f"u\x1f{dialogue}"}}
        assert rt._saver.get_tuple(config) is None
    assert [h.content for h in rt.search("keep", "我住在哪里", k=1)] == ["我住在北京。"]


def test_forget_one_memory(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    gone = rt.chat("u", "我的车牌号是浙A12345。", dialogue_id="d1", at=T0)
    kept = rt.chat("u", "我的车是蓝色的。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    assert rt.forget("u", gone.event_id) == 1
    assert {h.id for h in rt.search("u", "我的车", k=5)} == {kept.event_id}
    with pytest.raises(RecordNotFoundError):
        rt.forget("someone-else", kept.event_id)


def test_rebuild_reproduces_search_results(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    rt.ingest(
        "u",
        [
            {"role": "user", "text": text, "at": T0 + timedelta(hours=i), "dialogue_id": "old"}
            for i, text in enumerate(
                [
                    "我喜欢喝无糖乌龙茶",
                    "我女儿叫朵朵，今年五岁",
                    "I work as a nurse in Leeds",
                    "周三晚上我要上游泳课",
                    "我对猫毛过敏",
                ]
            )
        ],
    )
    queries = ["我女儿几岁了", "what is my job", "我对什么过敏", "喝什么茶"]
    before = [[(h.id, h.score) for h in rt.search("u", q, k=3, at=T0 + timedelta(days=2))] for q in queries]
    rt.memory.vectors.drop_all()
    rt.memory.keywords.clear()
    assert rt.search("u", queries[0], k=3) == []
    progress: list[int] = []
    assert rt.rebuild_index(progress=lambda done, total: progress.append(done)) == 5
    after = [[(h.id, h.score) for h in rt.search("u", q, k=3, at=T0 + timedelta(days=2))] for q in queries]
    assert after == before and progress[-1] == 5


def test_model_failure_keeps_the_message_and_the_dialogue_usable(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=[ConnectionError("refused"), "好的，记下了。"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    with pytest.raises(ChatModelUnavailableError) as info:
        rt.chat("u", "帮我记一下：明早八点开会", dialogue_id="d1", at=T0)
    assert "Ollama is not reachable" in str(info.value) and "TIANMA_OLLAMA__BASE_URL" in str(info.value)
    stored = rt.memories("u", kind="event")
    assert [e.content for e in stored] == ["帮我记一下：明早八点开会"]
    assert stored[0].id == info.value.event_id and stored[0].reply is None
    turn = rt.chat("u", "再说一遍：明早八点开会", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    assert turn.reply == "好的，记下了。"
    assert len(rt.memories("u", kind="event")) == 2


def test_feedback_is_a_signal_credited_to_the_injected_memories(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    stated = rt.chat("u", "我不吃香菜。", dialogue_id="d1", at=T0)
    turn = rt.chat("u", "推荐一道不放香菜的菜", dialogue_id="d2", at=T0 + timedelta(days=1))
    assert stated.event_id in {m.id for m in turn.resident}
    signal_id = rt.feedback(turn.event_id, "correction", text="我是说完全不要香菜")
    (signal,) = rt.memories("u", kind="signal")
    assert signal.id == signal_id and signal.confidence == 0.9
    assert signal.data["type"] == "correction" and signal.content == "我是说完全不要香菜"
    assert signal.data["target_event_id"] == turn.event_id
    assert stated.event_id in signal.data["credited"]
    with pytest.raises(InvalidInputError):
        rt.feedback(turn.event_id, "love")
    with pytest.raises(RecordNotFoundError):
        rt.feedback("no-such-event", "like")


def test_a_rephrase_is_an_implicit_signal_on_the_previous_turn(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder())
    first = rt.chat("u", "推荐杭州好吃的川菜馆", dialogue_id="d1", at=T0)
    second = rt.chat("u", "帮我推荐杭州好吃的川菜馆", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    assert [s.type for s in second.signals] == ["resubmit"]
    (signal,) = rt.memories("u", kind="signal")
    assert signal.data["target_event_id"] == first.event_id and signal.confidence == 0.6


def test_window_keeps_twenty_turns_and_folds_the_rest(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["收到。"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    for i in range(22):
        rt.chat("u", f"第{i}件事：记得买牛奶", dialogue_id="long", at=T0 + timedelta(minutes=i))
    last_prompt = model.prompts[-1]
    humans = [m for m in last_prompt if m.type == "human"]
    assert len(humans) <= 20
    assert humans[-1].content == "第21件事：记得买牛奶"
    assert any("早前对话摘要" in str(m.content) for m in last_prompt if m.type == "system")


def test_empty_input_is_refused(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder())
    with pytest.raises(InvalidInputError):
        rt.chat("u", "   ")
    with pytest.raises(InvalidInputError):
        rt.chat("", "hi")


def test_the_rolling_summary_is_written_by_the_model_when_it_can(make_runtime: RuntimeFactory) -> None:
    summary = '{"topic": "买牛奶的清单", "user_view": "要低脂", "decision": "记下了", "open_items": "", "emotion": "平静"}'

    def respond(messages: list) -> str:  # type: ignore[type-arg]
        return summary if "rolling summary" in str(messages[0].content) else "收到。"

    model = ScriptedChatModel(responder=respond)
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder(), learning={"auto_reflect": False})
    for i in range(22):
        rt.chat("u", f"第{i}件事：记得买牛奶", dialogue_id="long", at=T0 + timedelta(minutes=i))
    folded = [
        str(m.content) for m in model.prompts[-1] if m.type == "system" and "早前对话摘要" in str(m.content)
    ]
    assert folded and "买牛奶的清单" in folded[0] and "平静" in folded[0]
