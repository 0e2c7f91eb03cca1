"""Signals change what is learnt; broken LLM output changes nothing; triggers fire reflection."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, learning_model
from tests.unit.llm.test_structured import OUTCOMES
from tianma import InvalidInputError, RecordNotFoundError, Runtime
from tianma.storage import schema as t
from tianma.storage.external_signals import revise_signal
from tianma.storage.records import Provenance

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
CORPUS = Path(__file__).parents[1] / "fixtures" / "broken_json"


def add_fact(rt: Runtime, user: str, content: str, key: str) -> str:
    record = rt.memory.store.add_record(user, "fact", content, Provenance(source="test"), key=key,
                                        confidence=0.6, at=T0)  # fmt: skip
    rt.memory.index([record])
    return record.id


@pytest.fixture
def rt(make_runtime: RuntimeFactory) -> Runtime:
    model = learning_model("{}")
    return make_runtime(chat_model=model, embedder=CharacterEmbedder(), learning={"auto_reflect": False})


def test_signals_are_credited_to_the_memories_actually_injected(rt: Runtime) -> None:
    coffee = add_fact(rt, "u", "用户早上喝黑咖啡", "drink.morning")
    other = add_fact(rt, "u", "用户住在成都", "profile.city")
    first = rt.chat("u", "我早上喝黑咖啡吗", dialogue_id="d", at=T0)
    assert coffee in {m.id for m in first.memories} and other not in {m.id for m in first.memories}

    rt.chat("u", "不对，不是这个意思", dialogue_id="d", at=T0 + timedelta(minutes=1))
    assert rt.memory.store.get(coffee).confidence < 0.6
    assert rt.memory.store.get(other).confidence == 0.6
    (signal,) = rt.memories("u", kind="signal")
    assert signal.data["type"] == "correction" and signal.data["target_event_id"] == first.event_id
    assert signal.data["credited"] == [coffee]

    second = rt.chat("u", "我早上喝黑咖啡吗", dialogue_id="d2", at=T0 + timedelta(days=1))
    low = rt.memory.store.get(coffee).confidence
    rt.feedback(second.event_id, "like")
    assert rt.memory.store.get(coffee).confidence > low


def test_weak_signals_write_only_when_two_merge(rt: Runtime) -> None:
    coffee = add_fact(rt, "u", "用户早上喝黑咖啡", "drink.morning")
    rt.chat("u", "我早上喝黑咖啡吗", dialogue_id="d", at=T0)
    rt.chat("u", "算了", dialogue_id="d", at=T0 + timedelta(minutes=1))  # impatience 0.4: recorded only
    assert rt.memory.store.get(coffee).confidence == 0.6
    rt.chat("u", "我早上喝黑咖啡吗", dialogue_id="d", at=T0 + timedelta(minutes=2))
    rt.chat("u", "算了，随便吧", dialogue_id="d", at=T0 + timedelta(minutes=3))
    merged = [s for s in rt.memories("u", kind="signal") if s.data["type"] == "merged_negative"]
    assert len(merged) == 1 and merged[0].confidence == 0.7
    assert rt.memory.store.get(coffee).confidence < 0.6


@pytest.mark.parametrize("case", sorted(name for name, outcome in OUTCOMES.items() if outcome == "dropped"))
def test_a_malformed_reflection_writes_nothing(make_runtime: RuntimeFactory, case: str) -> None:
    broken = (CORPUS / f"{case}.txt").read_text(encoding="utf-8")

    def respond(prompt: str) -> str:  # cite a real event: only the syntax is wrong
        return re.sub(r"evt_\d+", re.findall(r"\[([0-9a-f-]{36})\]", prompt)[0], broken)

    rt = make_runtime(chat_model=learning_model(respond), embedder=CharacterEmbedder(),
                      learning={"auto_reflect": False})  # fmt: skip
    rt.chat("u", "今天下午开了一个很长的会", dialogue_id="d", at=T0)
    before = learnt_rows(rt)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    assert report.llm["dropped"] is True and report.llm["attempts"] == 2
    assert learnt_rows(rt) == before == 0


def test_the_clean_control_case_does_write(make_runtime: RuntimeFactory) -> None:
    """The corpus test above is meaningful: the same pipeline writes when the JSON is valid."""
    clean = (CORPUS / "01-clean-control.txt").read_text(encoding="utf-8")

    def respond(prompt: str) -> str:
        return re.sub(r"evt_\d+", re.findall(r"\[([0-9a-f-]{36})\]", prompt)[0], clean)

    rt = make_runtime(chat_model=learning_model(respond), embedder=CharacterEmbedder(),
                      learning={"auto_reflect": False})  # fmt: skip
    rt.chat("u", "今天下午开了一个很长的会", dialogue_id="d", at=T0)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    assert report.llm["dropped"] is False and learnt_rows(rt) >= 2


def learnt_rows(rt: Runtime) -> int:
    with rt.memory.store.engine.connect() as conn:
        query = select(func.count()).select_from(t.records).where(t.records.c.kind != "event",
                                                                  t.records.c.kind != "signal")  # fmt: skip
        return int(conn.execute(query).scalar_one())


def test_twenty_messages_trigger_a_reflection(make_runtime: RuntimeFactory) -> None:
    model = learning_model("{}")
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    topics = ["天气", "股票", "晚饭", "电影", "跑步", "读书", "旅行", "音乐", "猫", "工作",
              "咖啡", "周末", "手机", "花园", "篮球", "历史", "做饭", "画画", "游泳", "编程"]  # fmt: skip
    runs = [rt.chat("u", f"聊聊{topic}", dialogue_id="d", at=T0 + timedelta(minutes=i)).reflection_run_id
            for i, topic in enumerate(topics)]  # fmt: skip
    assert runs[:19] == [None] * 19 and runs[19] is not None
    with rt.memory.store.engine.connect() as conn:
        (run,) = conn.execute(select(t.reflection_runs)).all()
    assert run.trigger == "messages" and run.id == runs[19]


def test_after_a_reflection_the_count_starts_again(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=learning_model("{}"), embedder=CharacterEmbedder())
    words = ["天气", "股票", "晚饭", "电影", "跑步", "读书", "旅行", "音乐", "小猫", "工作", "咖啡", "周末", "手机",
             "花园", "篮球", "历史", "做饭", "画画", "游泳", "编程", "火车", "雨伞", "钢琴", "数学", "茶叶", "地图",
             "相机", "沙发", "面包", "月亮", "森林", "海洋", "桥梁", "电脑", "围棋", "书法", "自行车", "雪山", "牛奶",
             "台灯", "邮票", "口琴", "风筝", "灯笼", "剪纸"]  # fmt: skip
    runs = [rt.chat("u", f"说说{word}", dialogue_id="d", at=T0 + timedelta(minutes=i)).reflection_run_id
            for i, word in enumerate(words)]  # fmt: skip
    assert [i for i, run in enumerate(runs) if run is not None] == [19, 39]


def test_a_dialogue_going_badly_triggers_a_reflection_at_once(make_runtime: RuntimeFactory) -> None:
    model = learning_model("{}")
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    rt.chat("u", "帮我订明天去上海的机票", dialogue_id="d", at=T0)
    rt.chat("u", "不对，是后天", dialogue_id="d", at=T0 + timedelta(minutes=1))
    turn = rt.chat("u", "错了，我说的是后天下午", dialogue_id="d", at=T0 + timedelta(minutes=2))
    assert turn.reflection_run_id is not None
    with rt.memory.store.engine.connect() as conn:
        assert conn.execute(select(t.reflection_runs.c.trigger)).scalar_one() == "negative"


def test_five_finished_dialogues_trigger_a_reflection(make_runtime: RuntimeFactory) -> None:
    model = learning_model("{}")
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    for i in range(5):
        rt.chat("u", f"第{i}次聊天", dialogue_id=f"d{i}", at=T0 + timedelta(hours=i))
        rt.end_dialogue(f"d{i}", at=T0 + timedelta(hours=i, minutes=5))
    with rt.memory.store.engine.connect() as conn:
        triggers = conn.execute(select(t.reflection_runs.c.trigger)).scalars().all()
    assert triggers == ["dialogues"]


def test_revised_feedback_merges_into_the_signal_as_it_is_now(rt: Runtime) -> None:
    add_fact(rt, "u", "用户早上喝黑咖啡", "drink.morning")
    turn = rt.chat("u", "我早上喝黑咖啡吗", dialogue_id="d", at=T0)
    signal_id = rt.feedback(turn.event_id, "dislike", data={"openwebui": {"rating": -1}})
    before = rt.store.get(signal_id)  # what a client's handler read, before another writer changed it
    revise_signal(rt.memory.store, before, data={"archived_at": "2026-06-02"})  # e.g. an aggregation pass
    rt.revise_feedback(signal_id, content="太苦了", data={"openwebui": {"rating": -1, "reason": "taste"}})
    after = rt.store.get(signal_id)
    assert after.content == "太苦了" and after.data["archived_at"] == "2026-06-02"
    assert after.data["openwebui"] == {"rating": -1, "reason": "taste"}
    assert (after.confidence, after.data["credited"]) == (before.confidence, before.data["credited"])
    with pytest.raises(InvalidInputError):
        rt.revise_feedback(turn.event_id, content="x")
    with pytest.raises(RecordNotFoundError):
        rt.revise_feedback("no-such-signal", content="x")

