"""The reflection-trigger check runs in every turn: it must read index ranges, not a user's history."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tianma.memory.reflection_store import reflection_due
from tianma.settings import LearningSettings
from tianma.storage import schema as t
from tianma.storage.records import NewEvent, Provenance
from tianma.storage.sql_store import SqlMemoryStore

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlMemoryStore]:
    s = SqlMemoryStore.from_url(f"sqlite:///{tmp_path / 'm.db'}")
    history = [NewEvent(user_id="u", role="user", text=f"旧消息 {i}", at=T0 + timedelta(minutes=i),
                        dialogue_id=f"old-{i // 20}") for i in range(400)]  # fmt: skip
    s.add_events(history)
    for i in range(100):
        s.add_record("u", "signal", "", Provenance(source="test"), dialogue_id=f"old-{i // 20}",
                     data={"type": "correction"}, at=T0)  # fmt: skip
    with s.engine.begin() as conn:
        conn.execute(t.reflection_runs.insert().values(id="r1", user_id="u", started_at=T0, trigger="messages",
                                                       until=T0 + timedelta(days=1), status="published", report={}))  # fmt: skip
    s.add_events([NewEvent(user_id="u", role="user", text="新的", at=T0 + timedelta(days=2), dialogue_id="new")])
    yield s
    s.close()


def plans(store: SqlMemoryStore, run: Any) -> list[str]:
    """The query plan of every statement ``run`` sends, as one string each."""
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        run()
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    with store.engine.connect() as conn:
        return [" | ".join(str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params))
                for sql, params in sent]  # fmt: skip


def test_no_statement_reads_the_users_whole_history(store: SqlMemoryStore) -> None:
    found = plans(store, lambda: reflection_due(store, "u", "new", LearningSettings()))
    reads = [p for p in found if "records" in p]
    assert len(reads) == 3  # the dialogue's turns, its signals, the messages since the reflection
    for plan in reads:
        assert "ix_records_dialogue (user_id=? AND dialogue_id=?" in plan or "at>?" in plan, plan
    assert reflection_due(store, "u", "new", LearningSettings()) is None


def test_the_check_sees_a_scan(store: SqlMemoryStore) -> None:
    with store.engine.connect() as conn:
        sql = "SELECT count(*) FROM records WHERE user_id = ? AND kind = 'event' AND role = 'user' AND dialogue_id = ?"
        plan = " | ".join(str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", ("u", "new")))
    assert "ix_records_dialogue (user_id=? AND dialogue_id=?" not in plan and "at>?" not in plan
