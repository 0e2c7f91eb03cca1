"""The SQL store on an in-memory SQLite database and on a file."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from tianma import ConfigError
from tianma.errors import MemoryStoreError, RecordNotFoundError
from tianma.storage import schema as t
from tianma.storage.records import NewEvent, Provenance
from tianma.storage.sql_store import SqlMemoryStore, create_sql_engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlMemoryStore]:
    url = "sqlite://" if request.param == "memory" else f"sqlite:///{tmp_path / 'm.db'}"
    s = SqlMemoryStore.from_url(url)
    yield s
    s.close()


def event(
    user: str, text: str, dialogue: str = "d1", external_id: str | None = None, minutes: int = 0
) -> NewEvent:
    return NewEvent(
        user_id=user,
        role="user",
        text=text,
        at=T0 + timedelta(minutes=minutes),
        dialogue_id=dialogue,
        external_id=external_id,
    )


def test_events_round_trip_with_aware_times(store: SqlMemoryStore) -> None:
    (stored,), added = store.add_events([event("u", "你好")])
    assert added == {stored.id}
    got = store.get(stored.id)
    assert got.content == "你好" and got.kind == "event" and got.at == T0
    assert got.at is not None and got.at.tzinfo is not None
    assert got.source_event_ids == (stored.id,)


def test_external_ids_make_ingest_idempotent(store: SqlMemoryStore) -> None:
    first, added1 = store.add_events(
        [event("u", "a", external_id="D1:1"), event("u", "b", external_id="D1:2")]
    )
    again, added2 = store.add_events(
        [event("u", "a", external_id="D1:1"), event("u", "c", external_id="D1:3")]
    )
    assert again[0].id == first[0].id
    assert len(added1) == 2 and len(added2) == 1
    assert store.count("u") == 3


def test_a_record_without_provenance_is_refused(store: SqlMemoryStore) -> None:
    with pytest.raises(MemoryStoreError, match="provenance"):
        store.add_record("u", "fact", "住在杭州", Provenance())


def test_hits_and_listing(store: SqlMemoryStore) -> None:
    (ev,), _ = store.add_events([event("u", "我住在杭州")])
    fact = store.add_record(
        "u", "fact", "住在杭州", Provenance(event_ids=(ev.id,), source="test"), key="profile.city", at=T0
    )
    store.record_hits([fact.id], T0 + timedelta(days=1))
    store.record_hits([fact.id], T0 + timedelta(days=2))
    got = store.get(fact.id)
    assert got.hit_count == 2 and got.last_hit_at == T0 + timedelta(days=2)
    assert [r.id for r in store.list_records("u", "fact")] == [fact.id]
    assert [r.id for r in store.facts_with_keys("u")] == [fact.id]
    assert store.list_records("other") == []
    assert store.get_many("other", [fact.id]) == {}


def test_a_dialogue_belongs_to_one_user(store: SqlMemoryStore) -> None:
    store.add_events([event("alice", "hi", dialogue="shared")])
    with pytest.raises(MemoryStoreError, match="another user"):
        store.add_events([event("bob", "hi", dialogue="shared")])


def test_end_dialogue_of_unknown_id(store: SqlMemoryStore) -> None:
    with pytest.raises(RecordNotFoundError):
        store.end_dialogue("nope", T0)


def test_delete_user_leaves_no_row_anywhere(store: SqlMemoryStore) -> None:
    (ev,), _ = store.add_events([event("u", "secret")])
    fact = store.add_record("u", "fact", "x", Provenance(event_ids=(ev.id,), source="test"))
    store.add_injections(ev.id, "u", [{"record_id": fact.id, "role": "memory", "rank": 0, "score": 1.0}])
    (keep,), _ = store.add_events([event("v", "other", dialogue="d2")])
    store.delete("u")
    with store.engine.connect() as conn:
        for table in (t.records, t.record_versions, t.injections, t.replace_log, t.dialogues):
            rows = conn.execute(select(func.count()).select_from(table).where(table.c.user_id == "u"))
            assert rows.scalar_one() == 0, table.name
    assert store.get(keep.id).content == "other"


def test_schema_version_is_recorded_and_a_newer_file_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    engine = create_sql_engine(url)
    with engine.begin() as conn:
        version = conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar_one()
        assert int(version) == t.SCHEMA_VERSION
        conn.execute(update(t.meta).values(value=str(t.SCHEMA_VERSION + 1)))
    engine.dispose()
    with pytest.raises(ConfigError, match="newer"):
        create_sql_engine(url)


def test_reopening_a_file_keeps_the_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    first = SqlMemoryStore.from_url(url)
    (ev,), _ = first.add_events([event("u", "记住我")])
    first.close()
    second = SqlMemoryStore.from_url(url)
    assert second.get(ev.id).content == "记住我"
    second.close()


def test_an_older_file_is_migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    create_sql_engine(url).dispose()
    ran: list[int] = []
    monkeypatch.setattr(t, "SCHEMA_VERSION", t.SCHEMA_VERSION + 1)
    monkeypatch.setitem(t.MIGRATIONS, t.SCHEMA_VERSION, lambda conn: ran.append(1))
    engine = create_sql_engine(url)
    with engine.connect() as conn:
        version = conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar_one()
    engine.dispose()
    assert ran == [1] and int(version) == t.SCHEMA_VERSION


def test_a_version_1_file_gets_the_reflection_tables_and_the_review_queue(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v1.db'}"
    engine = create_sql_engine(url)
    with engine.begin() as conn:  # make it look like a file written by schema version 1
        conn.exec_driver_sql("DROP TABLE reviews")
        conn.exec_driver_sql("DROP TABLE reflection_runs")
        conn.exec_driver_sql("DROP TABLE run_changes")
        conn.exec_driver_sql("ALTER TABLE record_versions DROP COLUMN run_id")
        conn.exec_driver_sql("ALTER TABLE replace_log DROP COLUMN run_id")
        conn.exec_driver_sql("ALTER TABLE records DROP COLUMN valid_from")
        conn.exec_driver_sql("ALTER TABLE records DROP COLUMN valid_until")
        conn.execute(update(t.meta).values(value="1"))
    engine.dispose()
    migrated = create_sql_engine(url)
    with migrated.connect() as conn:
        version = conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar_one()
        columns = {row[1] for row in conn.exec_driver_sql("PRAGMA table_info(record_versions)")}
        tables = {row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
    migrated.dispose()
    assert int(version) == t.SCHEMA_VERSION and "run_id" in columns
    assert {"reflection_runs", "run_changes", "reviews", "job_runs"} <= tables


def test_a_version_3_file_gets_the_job_run_log(tmp_path: Path) -> None:
    from sqlalchemy.exc import IntegrityError

    url = f"sqlite:///{tmp_path / 'v3.db'}"
    engine = create_sql_engine(url)
    with engine.begin() as conn:  # make it look like a file written by schema version 3
        conn.exec_driver_sql("DROP TABLE job_runs")
        conn.exec_driver_sql("ALTER TABLE records DROP COLUMN valid_from")
        conn.exec_driver_sql("ALTER TABLE records DROP COLUMN valid_until")
        conn.execute(update(t.meta).values(value="3"))
    engine.dispose()
    migrated = create_sql_engine(url)
    with migrated.connect() as conn:
        version = conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar_one()
    assert int(version) == t.SCHEMA_VERSION
    row = {"job": "decay", "slot": T0, "started_at": T0, "status": "running"}
    with migrated.begin() as conn:
        conn.execute(t.job_runs.insert().values(**row))
    with pytest.raises(IntegrityError), migrated.begin() as conn:  # one run per (job, slot)
        conn.execute(t.job_runs.insert().values(**row))
    migrated.dispose()


def test_a_version_4_file_gets_validity_intervals_from_when_each_record_was_said(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v4.db'}"
    store = SqlMemoryStore(create_sql_engine(url))
    said = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    (event,), _ = store.add_events([NewEvent("u", "user", "以后先给结论", said, "d1")])
    with store.engine.begin() as conn:  # as a schema-4 file: no validity columns
        conn.exec_driver_sql("ALTER TABLE records DROP COLUMN valid_from")
        conn.exec_driver_sql("ALTER TABLE records DROP COLUMN valid_until")
        conn.execute(update(t.meta).values(value="4"))
    store.close()
    migrated = SqlMemoryStore(create_sql_engine(url))
    again = migrated.get(event.id)
    migrated.close()
    assert again.valid_from == said and again.valid_until is None and again.content == "以后先给结论"
