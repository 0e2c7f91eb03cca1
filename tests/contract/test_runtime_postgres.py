"""A whole Runtime with its records, keyword index, job tables and dialogue windows (LangGraph's
checkpoints) on PostgreSQL, the vectors in Qdrant Edge: a dialogue's window carries over turns,
one checkpoint per dialogue is kept, what a turn stores is found by the next dialogue through
both search channels, learnt from, and forgotten — the windows too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, text

from tests.conftest import RuntimeFactory
from tests.fakes import ScriptedChatModel
from tianma.storage.keyword_postgres import PostgresKeywordIndex
from tianma.text.tokenize import tokenize

T0 = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)


def test_a_runtime_on_postgres_remembers_searches_and_forgets(make_runtime: RuntimeFactory, postgres_url: str) -> None:
    model = ScriptedChatModel(replies=["好的。"])
    rt = make_runtime(chat_model=model, sql={"url": postgres_url})
    assert rt.memory.store.engine.dialect.name == "postgresql"
    assert isinstance(rt.memory.keywords, PostgresKeywordIndex)

    rt.chat("li", "你好，我叫李明。", dialogue_id="d1", at=T0)
    stated = rt.chat("li", "以后周末别给我安排提醒。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    rt.chat("li", "我家的猫叫 Quokkabelle，是只橘猫。", dialogue_id="d1", at=T0 + timedelta(minutes=2))
    assert "以后周末别给我安排提醒" in str(model.prompts[-1])  # the window, read back from PostgreSQL
    rt.end_dialogue("d1", at=T0 + timedelta(minutes=3))
    assert not (rt.settings.home / "checkpoints.db").exists()
    assert _checkpoints(postgres_url) == {"li\x1fd1": 1}  # one, the newest, per dialogue

    turn = rt.chat("li", "这周六帮我安排一下日程吧", dialogue_id="d2", at=T0 + timedelta(days=4))
    assert stated.event_id in {m.id for m in turn.resident}
    # the keyword channel on PostgreSQL finds the rare name
    found = rt.memory.keywords.search("li", tokenize("Quokkabelle"), 5)
    assert found and all(score > 0 for _, score in found)
    assert rt.memory.keywords.search("wang", tokenize("Quokkabelle"), 5) == []
    cat = rt.chat("li", "Quokkabelle 最近不爱吃饭怎么办？", dialogue_id="d3", at=T0 + timedelta(days=5))
    assert any("Quokkabelle" in m.content for m in (*cat.memories, *cat.resident))

    (report,) = rt.reflect("li", at=T0 + timedelta(days=6))  # the rules learn on PostgreSQL too
    assert report.run_id and any(r.kind != "event" for r in rt.memories("li"))

    rt.forget("li")
    assert rt.memory.keywords.count("li") == 0
    assert rt.memories("li") == []
    assert _checkpoints(postgres_url) == {}


def _checkpoints(url: str) -> dict[str, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT thread_id, count(*) FROM checkpoints GROUP BY thread_id")).all()
        return {str(thread): int(n) for thread, n in rows}
    finally:
        engine.dispose()


def test_windows_in_postgres_are_redacted_and_a_forgotten_message_leaves_them(
    make_runtime: RuntimeFactory, postgres_url: str
) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的。"] * 4), sql={"url": postgres_url})
    rt.chat("u", "我的电话是13812345678，哪家银行离我近？", dialogue_id="d1", at=T0)
    kept = rt.chat("u", "我下周三要去札幌看雪景", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    raw = _window_bytes(postgres_url)
    assert b"13812345678" not in raw  # redacted before it was written (asked in passing, not to keep)
    assert "札幌看雪景".encode() in raw
    rt.forget("u", kept.event_id)  # the window quoting it is found in PostgreSQL and cleaned
    assert "札幌看雪景".encode() not in _window_bytes(postgres_url)
    assert _checkpoints(postgres_url) == {"u\x1fd1": 1}
    rt.end_dialogue("d1", at=T0 + timedelta(minutes=2))
    assert rt.drop_old_windows(at=T0 + timedelta(days=rt.settings.window.keep_days + 1)) == 1
    assert _checkpoints(postgres_url) == {}


def _window_bytes(url: str) -> bytes:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            blobs = conn.execute(text("SELECT coalesce(blob, ''::bytea) FROM checkpoint_blobs")).scalars().all()
            writes = conn.execute(text("SELECT coalesce(blob, ''::bytea) FROM checkpoint_writes")).scalars().all()
            docs = conn.execute(text("SELECT checkpoint::text FROM checkpoints")).scalars().all()
        return b"".join(bytes(b) for b in [*blobs, *writes]) + "".join(docs).encode()
    finally:
        engine.dispose()
