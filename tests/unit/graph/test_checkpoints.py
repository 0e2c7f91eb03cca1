"""Minimal checkpoints: one per dialogue, only the window and ids, redacted, bounded in size."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma.graph.checkpoints import KEPT_CHANNELS

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def checkpoints(rt) -> list[tuple[str, dict]]:
    conn = sqlite3.connect(rt.settings.checkpoint_path)
    try:
        rows = conn.execute("SELECT thread_id, type, checkpoint FROM checkpoints").fetchall()
    finally:
        conn.close()
    serde = JsonPlusSerializer()
    return [(thread, serde.loads_typed((kind, blob))) for thread, kind, blob in rows]


def test_one_checkpoint_per_dialogue_with_only_the_window_and_ids(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder())
    for i in range(4):
        rt.chat("u", f"第{i}个问题：杭州有什么好吃的？", dialogue_id="d1", at=T0 + timedelta(minutes=i))
    rt.chat("u", "另一个对话", dialogue_id="d2", at=T0 + timedelta(hours=1))
    found = checkpoints(rt)
    assert sorted(thread.split("\x1f")[1] for thread, _ in found) == ["d1", "d2"]
    for _, ck in found:
        assert set(ck["channel_values"]) <= KEPT_CHANNELS
        assert {"messages", "event_id"} <= set(ck["channel_values"])
    (d1,) = [ck for thread, ck in found if thread.endswith("d1")]
    assert len(d1["channel_values"]["messages"]) == 8  # the window is still whole


def test_no_raw_message_or_memory_text_or_vector_is_checkpointed(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), chat_model=ScriptedChatModel(replies=["好的。"] * 5))
    rt.ingest("u", [{"role": "user", "text": "我最喜欢的城市是札幌雪景", "at": T0.isoformat(), "dialogue_id": "old"}])
    turn = rt.chat("u", "我的电话是13812345678，我喜欢哪个城市？", dialogue_id="d1", at=T0 + timedelta(days=1))
    assert any("札幌雪景" in m.content for m in turn.memories)  # it was injected this turn
    rt.close()
    raw = rt.settings.checkpoint_path.read_bytes()
    wal = rt.settings.checkpoint_path.with_name("checkpoints.db-wal")
    raw += wal.read_bytes() if wal.exists() else b""
    assert "札幌雪景".encode() not in raw
    assert b"13812345678" not in raw
    assert "我喜欢哪个城市".encode() in raw  # the (redacted) window is kept


def test_the_file_grows_with_dialogues_not_with_turns(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), window={"turns": 4, "fold": 2})

    def size_after(turns: int, dialogue: str) -> int:
        for i in range(turns):
            rt.chat("u", f"第{i}轮：说说路由器的设置。", dialogue_id=dialogue, at=T0 + timedelta(minutes=i))
        (ck,) = [ck for thread, ck in checkpoints(rt) if thread.endswith(dialogue)]
        return len(JsonPlusSerializer().dumps_typed(ck)[1])

    short, long = size_after(6, "a"), size_after(30, "b")
    assert long < 1.5 * short
    assert len(checkpoints(rt)) == 2


def test_windows_of_dialogues_ended_long_ago_are_dropped(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), window={"keep_days": 30})
    rt.chat("u", "很久以前的对话", dialogue_id="old", at=T0)
    rt.end_dialogue("old", at=T0 + timedelta(minutes=1))
    rt.chat("u", "前几天的对话", dialogue_id="recent", at=T0 + timedelta(days=25))
    rt.end_dialogue("recent", at=T0 + timedelta(days=25, minutes=1))
    rt.chat("u", "还开着的对话", dialogue_id="open", at=T0)  # never ended: kept however old
    assert rt.drop_old_windows(at=T0 + timedelta(days=40)) == 1
    assert sorted(thread.split("\x1f")[1] for thread, _ in checkpoints(rt)) == ["open", "recent"]
    assert rt.drop_old_windows(at=T0 + timedelta(days=40)) == 0  # nothing left to drop
    assert any(m.content == "很久以前的对话" for m in rt.memories("u"))  # the message stays an event


def test_keep_days_zero_keeps_every_window(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), window={"keep_days": 0})
    rt.chat("u", "很久以前的对话", dialogue_id="old", at=T0)
    rt.end_dialogue("old", at=T0 + timedelta(minutes=1))
    assert rt.drop_old_windows(at=T0 + timedelta(days=4000)) == 0
    assert len(checkpoints(rt)) == 1
