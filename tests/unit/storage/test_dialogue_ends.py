"""Idle dialogues in a real SQLite file: which are idle, ending once (two processes), reopening."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from tianma.errors import RecordNotFoundError
from tianma.storage import schema as t
from tianma.storage.dialogue_ends import IdleDialogue, end_idle, idle_dialogues
from tianma.storage.records import NewEvent
from tianma.storage.sql_store import SqlMemoryStore, create_sql_engine

T0 = datetime(2026, 3, 4, 9, tzinfo=UTC)
IDLE = timedelta(minutes=30)


def minutes(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


def turn(store: SqlMemoryStore, dialogue: str, at: datetime, user: str = "u") -> None:
    store.add_events([NewEvent(user, "user", "你好", at, dialogue, reply="好的。")])


def ended_at(store: SqlMemoryStore, dialogue: str) -> datetime | None:
    with store.engine.connect() as conn:
        value = conn.execute(select(t.dialogues.c.ended_at).where(t.dialogues.c.id == dialogue)).scalar()
    return None if value is None else t.as_aware(value)


def test_idle_dialogues_are_the_open_ones_whose_last_turn_is_old_enough(store: SqlMemoryStore) -> None:
    turn(store, "a", minutes(0))
    turn(store, "a", minutes(10))  # its last turn
    turn(store, "b", minutes(5), user="v")
    turn(store, "c", minutes(30))  # recent
    store.end_dialogue("b", minutes(6))  # already ended
    found = idle_dialogues(store.engine, minutes(41) - IDLE)
    assert found == [IdleDialogue("a", "u", minutes(10))]
    assert idle_dialogues(store.engine, minutes(39) - IDLE) == []  # a: 29 minutes only
    oldest_first = idle_dialogues(store.engine, minutes(61) - IDLE)
    assert [d.dialogue_id for d in oldest_first] == ["a", "c"]
    assert len(idle_dialogues(store.engine, minutes(61) - IDLE, limit=1)) == 1


def test_two_processes_end_an_idle_dialogue_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = create_sql_engine(url), create_sql_engine(url)  # as serve and cron would
    try:
        turn(SqlMemoryStore(first), "a", minutes(0))
        [seen_by_first] = idle_dialogues(first, minutes(45) - IDLE)
        [seen_by_second] = idle_dialogues(second, minutes(45) - IDLE)
        assert end_idle(first, seen_by_first, minutes(30)) is True
        assert end_idle(second, seen_by_second, minutes(30)) is False  # ended meanwhile
        assert end_idle(first, seen_by_first, minutes(31)) is False  # and ending twice does nothing
        assert ended_at(SqlMemoryStore(first), "a") == minutes(30)
        assert idle_dialogues(second, minutes(90)) == []
    finally:
        first.dispose()
        second.dispose()


def test_a_turn_after_the_idle_check_keeps_the_dialogue_open(store: SqlMemoryStore) -> None:
    turn(store, "a", minutes(0))
    [seen] = idle_dialogues(store.engine, minutes(40) - IDLE)
    turn(store, "a", minutes(39))  # a turn lands between the check and the end
    assert end_idle(store.engine, seen, minutes(30)) is False and ended_at(store, "a") is None


def test_a_later_turn_reopens_an_ended_dialogue_and_it_ends_again(store: SqlMemoryStore) -> None:
    turn(store, "a", minutes(0))
    assert store.end_dialogue("a", minutes(30)) is True
    assert store.end_dialogue("a", minutes(35)) is False and ended_at(store, "a") == minutes(30)  # once
    store.add_events([NewEvent("u", "user", "旧消息", minutes(-60), "a")])  # an import of older history
    assert ended_at(store, "a") == minutes(30)  # does not reopen it
    turn(store, "a", minutes(120))  # the user came back to the chat
    assert ended_at(store, "a") is None
    [again] = idle_dialogues(store.engine, minutes(151) - IDLE)
    assert again.last_turn_at == minutes(120) and end_idle(store.engine, again, minutes(150)) is True
    with pytest.raises(RecordNotFoundError):
        store.end_dialogue("nope", minutes(1))
