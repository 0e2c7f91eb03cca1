"""A whole Runtime with its records, keyword index and job tables on PostgreSQL (the vectors in
Qdrant Edge and the checkpoints in the home, as on SQLite): what a turn stores is found by the
next dialogue through both search channels, learnt from, and forgotten."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
    rt.end_dialogue("d1", at=T0 + timedelta(minutes=3))

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
