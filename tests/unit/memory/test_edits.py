"""A person's edit of a learnt record: a new version with the reason, re-indexed, undoable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tianma import Runtime
from tianma.errors import InvalidInputError, RecordNotFoundError
from tianma.memory.edits import EDIT_REASON, edit_reason
from tianma.storage.records import NewEvent, Provenance

T0 = datetime(2026, 6, 1, 9, tzinfo=UTC)


@pytest.fixture
def rt(make_runtime: RuntimeFactory) -> Runtime:
    return make_runtime(embedder=CharacterEmbedder())


def add(rt: Runtime, content: str, kind: str = "preference", user: str = "u") -> str:
    record = rt.memory.store.add_record(
        user,
        kind,
        content,
        Provenance(source="test"),
        at=T0,
        confidence=0.8,  # type: ignore[arg-type]
    )
    rt.memory.index([record])
    return record.id


def test_edit_reason_keeps_the_persons_words() -> None:
    assert edit_reason("") == EDIT_REASON
    assert edit_reason("  写错了\n ") == f"{EDIT_REASON}: 写错了"


def test_an_edit_is_a_new_version_with_the_reason_and_the_old_text_kept(rt: Runtime) -> None:
    rid = add(rt, "用户喜欢喝美式咖啡")
    done = rt.edit(rid, "用户喜欢喝拿铁", "口味变了", at=T0 + timedelta(days=1))
    assert done.version == 2 and done.content == "用户喜欢喝拿铁"
    record = rt.memory.store.get(rid)
    assert record.content == "用户喜欢喝拿铁" and record.version == 2
    old, current = rt.history(rid)
    assert old.content == "用户喜欢喝美式咖啡" and old.change_reason == f"{EDIT_REASON}: 口味变了"
    assert old.run_id == done.run_id and current.current is True


def test_an_edit_is_reindexed(rt: Runtime) -> None:
    rid = add(rt, "用户喜欢喝美式咖啡")
    rt.edit(rid, "用户每周末去爬山", at=T0)
    assert [m.id for m in rt.search("u", "爬山", k=3, at=T0)] == [rid]
    found = {m.id: m.content for m in rt.search("u", "用户每周末去爬山", k=3, at=T0)}
    assert found[rid] == "用户每周末去爬山"


def test_an_edit_is_undone_in_one_step(rt: Runtime) -> None:
    rid = add(rt, "回答时先给结论", kind="strategy")
    done = rt.edit(rid, "回答时先给出处", at=T0)
    rt.undo_reflection(done.run_id)
    record = rt.memory.store.get(rid)
    assert record.content == "回答时先给结论" and record.version == 1
    assert len(rt.history(rid)) == 1


def test_events_signals_empty_and_unchanged_content_are_refused(rt: Runtime) -> None:
    (event,) = rt.memory.record_events(
        [NewEvent(user_id="u", role="user", text="你好", at=T0, dialogue_id="d1")]
    )
    with pytest.raises(InvalidInputError, match="event"):
        rt.edit(event.id, "改写历史")
    rid = add(rt, "用户喜欢茶")
    for content in ("", "   ", "用户喜欢茶", "x" * 4001):
        with pytest.raises(InvalidInputError):
            rt.edit(rid, content)
    with pytest.raises(RecordNotFoundError):
        rt.edit("no-such-record", "x")
    assert rt.memory.store.get(rid).version == 1


def test_pii_in_an_edit_is_redacted_like_any_message(rt: Runtime) -> None:
    rid = add(rt, "用户的电话")
    rt.edit(rid, "用户的电话是 13812345678")
    assert "13812345678" not in rt.memory.store.get(rid).content
