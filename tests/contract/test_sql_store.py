"""Every MemoryStore passes this suite: the SQL store on SQLite (in memory and on a file) and on
PostgreSQL (a throwaway server, :mod:`tests.contract.conftest`)."""

from __future__ import annotations

import importlib.util
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.engine import Connection

from tianma import ConfigError
from tianma.errors import BackendUnavailableError, MemoryStoreError, RecordNotFoundError
from tianma.storage import schema as t
from tianma.storage.erase import FORGOTTEN
from tianma.storage.protocols import MemoryStore
from tianma.storage.records import NewEvent, Provenance
from tianma.storage.sql_store import SqlMemoryStore, create_sql_engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEST = Provenance(source="test")


@pytest.fixture(params=["memory", "file", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlMemoryStore]:
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    else:
        url = "sqlite://" if request.param == "memory" else f"sqlite:///{tmp_path / 'm.db'}"
    s = SqlMemoryStore.from_url(url)
    yield s
    s.close()


@pytest.fixture(params=["file", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database that outlives its engine (not SQLite in memory)."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'm.db'}"


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


def test_is_a_memory_store(store: SqlMemoryStore) -> None:
    assert isinstance(store, MemoryStore)


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
    store.add_events([NewEvent("u", "user", "以后先给结论", T0, "d1", key="statement.preference")])
    assert [r.id for r in store.facts_with_keys("u")] == [fact.id]  # a keyed statement event is not read
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


def statement(store: SqlMemoryStore, text: str, key: str, minutes: int, until: int | None = None) -> str:
    ev = NewEvent("u", "user", text, T0 + timedelta(minutes=minutes), "d1", key=key,
                  valid_until=None if until is None else T0 + timedelta(minutes=until))  # fmt: skip
    (stored,), _ = store.add_events([ev])
    return stored.id


def test_records_keep_json_tags_and_times_in_any_zone(store: SqlMemoryStore) -> None:
    beijing = timezone(timedelta(hours=8))
    data = {"quote": "先给结论", "n": [1, 2.5, None], "nested": {"ok": True}}
    fact = store.add_record("u", "fact", "住在杭州", TEST, at=datetime(2026, 1, 1, 8, tzinfo=beijing),
                            tags=("城市", "home"), data=data, key="profile.city")  # fmt: skip
    got = store.get(fact.id)
    assert got.data == data and got.tags == ("城市", "home") and got.key == "profile.city"
    assert got.created_at == T0 and got.created_at.utcoffset() == timedelta(0)
    assert got == fact


def test_listing_filters_orders_and_counts(store: SqlMemoryStore) -> None:
    low = store.add_record("u", "fact", "a", TEST, at=T0, confidence=0.2)
    high = store.add_record("u", "strategy", "b", TEST, at=T0 + timedelta(minutes=1), confidence=0.9)
    pending = store.add_record("u", "fact", "c", TEST, at=T0 + timedelta(minutes=2), status="pending")
    other = store.add_record("v", "fact", "d", TEST, at=T0 + timedelta(minutes=3))
    assert [r.id for r in store.list_records("u")] == [low.id, high.id, pending.id]
    assert [r.id for r in store.list_records("u", ["fact", "strategy"], "active")] == [low.id, high.id]
    confident = store.list_records("u", most_confident_first=True, limit=2)
    assert [r.id for r in confident] == [high.id, pending.id]
    assert [r.id for r in store.list_records(None, "fact")] == [low.id, pending.id, other.id]
    assert sorted(store.users()) == ["u", "v"]
    assert (store.count(), store.count("u"), store.count("u", status="pending")) == (4, 3, 1)
    assert store.get_many("u", [low.id, other.id, "nope"]) == {low.id: low}
    with pytest.raises(RecordNotFoundError):
        store.get("nope")


def test_next_events_and_a_dialogues_signals(store: SqlMemoryStore) -> None:
    evs, _ = store.add_events([event("u", f"m{i}", minutes=i) for i in range(3)])
    store.add_events([event("u", "elsewhere", dialogue="d2", minutes=1)])
    nxt = store.next_events("u", evs)
    assert {k: v.content for k, v in nxt.items()} == {evs[0].id: "m1", evs[1].id: "m2"}
    assert store.next_events("v", evs) == {}
    signals = [
        store.add_record("u", "signal", f"s{i}", TEST, at=T0 + timedelta(minutes=i), dialogue_id="d1")
        for i in (1, 0)
    ]
    assert [r.id for r in store.signals_of_dialogue("u", "d1")] == [signals[1].id, signals[0].id]
    assert store.signals_of_dialogue("u", "d2") == [] and store.signals_of_dialogue("v", "d1") == []


def test_a_dialogue_ends_once_and_a_later_turn_opens_it_again(store: SqlMemoryStore) -> None:
    store.add_events([event("u", "hi")])
    assert store.get_dialogue_user("d1") == "u"
    assert store.end_dialogue("d1", T0 + timedelta(minutes=5)) is True
    assert store.end_dialogue("d1", T0 + timedelta(minutes=6)) is False
    store.add_events([event("u", "back again", minutes=30)])
    assert store.end_dialogue("d1", T0 + timedelta(minutes=40)) is True
    with pytest.raises(RecordNotFoundError):
        store.get_dialogue_user("nope")


def test_injections_come_back_in_rank_order(store: SqlMemoryStore) -> None:
    (ev,), _ = store.add_events([event("u", "q")])
    rows = [
        {"record_id": "r2", "role": "memory", "rank": 1, "score": 0.5},
        {"record_id": "r3", "role": "strategy", "rank": 0, "score": 0.7},
        {"record_id": "r1", "role": "memory", "rank": 0, "score": 0.9},
    ]
    store.add_injections(ev.id, "u", rows)
    got = store.injections_of(ev.id)
    assert [(r["record_id"], r["explored"]) for r in got] == [("r1", 0), ("r2", 0), ("r3", 0)]
    assert got[0]["score"] == 0.9 and store.injections_of("other") == []


def test_current_statements_are_the_statement_keys_still_valid(store: SqlMemoryStore) -> None:
    # byte order: "Statement.x" and "statements" are not statement keys, whatever the database's collation
    keep = statement(store, "以后先给结论", "statement.style", 0)
    statement(store, "这周在出差", "statement.trip", 1, until=5)
    later = statement(store, "回答用中文", "statement.lang", 2)
    for i, key in enumerate(("Statement.style", "statements", "statement", "profile.city")):
        statement(store, "not a statement", key, 3 + i)
    assert [r.id for r in store.current_statements("u", T0 + timedelta(minutes=10))] == [later, keep]
    assert [r.id for r in store.current_statements("u", T0 + timedelta(minutes=10), limit=1)] == [later]
    assert store.current_statements("u", T0 - timedelta(minutes=1)) == []


def test_a_revision_ends_the_statements_it_replaced_and_what_restated_them(store: SqlMemoryStore) -> None:
    first = statement(store, "先给结论", "statement.style", 0)
    again = statement(store, "先给结论", "statement.style", 1)
    revised = statement(store, "不用先给结论了", "statement.style", 2)
    at1, at2 = T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)
    assert store.end_validity("u", [first], at1, again, {first: "restated"}) == [first]
    assert store.end_validity("v", [again], at2, revised, {}) == []  # not v's
    assert store.end_validity("u", [again, first], at2, revised, {again: "revised"}) == [again]
    closed = store.get(first)
    assert closed.valid_until == at1 and closed.data == {"closed_by": revised, "closed_as": "revised"}
    assert store.get(again).valid_until == at2
    assert [r.id for r in store.current_statements("u", T0 + timedelta(minutes=3))] == [revised]


def test_put_data_sets_entries_of_the_users_own_records_only(store: SqlMemoryStore) -> None:
    mine = statement(store, "以后先给结论", "statement.style", 0)
    theirs = statement(store, "回答用中文", "statement.lang", 1)
    store.end_validity("u", [mine], T0 + timedelta(minutes=2), theirs, {mine: "revised"})
    store.put_data("u", {mine: {"subject_vector": {"embedder": "e", "f16": "AAA="}}, "no-such-id": {"x": 1}})
    assert store.get(mine).data == {"closed_by": theirs, "closed_as": "revised",
                                    "subject_vector": {"embedder": "e", "f16": "AAA="}}  # fmt: skip
    store.put_data("v", {theirs: {"x": 1}})  # another user's record: left alone
    assert "x" not in store.get(theirs).data
    store.put_data("u", {})


def test_forgetting_a_dialogue_blanks_its_text_elsewhere(store: SqlMemoryStore) -> None:
    (ev,), _ = store.add_events([event("u", "我的新地址是西湖区文三路")])
    (kept,), _ = store.add_events([event("u", "别的话题", dialogue="d2")])
    fact = store.add_record("u", "fact", "住在西湖区", Provenance(event_ids=(ev.id,)),
                            data={"quote": "我的新地址是西湖区文三路", "why": "他说的"})  # fmt: skip
    other = store.add_record("v", "fact", "x", TEST, data={"quote": "我的新地址是西湖区文三路"})
    assert store.delete("u", dialogue_id="d1").ids == [ev.id]
    assert store.get(fact.id).data == {"quote": FORGOTTEN, "why": "他说的"}
    assert store.get(other.id).data == {"quote": "我的新地址是西湖区文三路"}  # another user's row
    assert store.get(kept.id).content == "别的话题"
    with pytest.raises(RecordNotFoundError):
        store.get_dialogue_user("d1")
    deleted = store.delete("u", [fact.id])
    assert deleted.ids == [fact.id] and fact.content in deleted.texts and store.count("u") == 1
    store.compact()
    assert store.count() == 2


def test_a_missing_driver_is_a_config_error_and_no_error_shows_the_password() -> None:
    if importlib.util.find_spec("pg8000") is not None:
        pytest.skip("pg8000 is installed here")
    with pytest.raises(ConfigError, match=r"pg8000 is not installed .*tianma\[postgres\]") as missing:
        create_sql_engine("postgresql+pg8000://me:s3cret@127.0.0.1/x")
    with pytest.raises(BackendUnavailableError) as refused:  # nothing listens on port 1
        create_sql_engine("postgresql+psycopg://me:s3cret@127.0.0.1:1/x")
    assert "s3cret" not in str(missing.value) + str(refused.value)
    assert "me:***@127.0.0.1:1" in str(refused.value)


def schema_version(conn: Connection) -> int:
    return int(conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar_one())


def test_schema_version_is_recorded_and_a_newer_database_is_refused(url: str) -> None:
    engine = create_sql_engine(url)
    with engine.begin() as conn:
        assert schema_version(conn) == t.SCHEMA_VERSION
        conn.execute(update(t.meta).values(value=str(t.SCHEMA_VERSION + 1)))
    engine.dispose()
    with pytest.raises(ConfigError, match="newer"):
        create_sql_engine(url)


def test_reopening_a_database_keeps_the_data(url: str) -> None:
    first = SqlMemoryStore.from_url(url)
    (ev,), _ = first.add_events([event("u", "记住我")])
    first.close()
    second = SqlMemoryStore.from_url(url)
    assert second.get(ev.id).content == "记住我"
    second.close()


def test_an_older_database_is_migrated(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    create_sql_engine(url).dispose()
    ran: list[int] = []
    monkeypatch.setattr(t, "SCHEMA_VERSION", t.SCHEMA_VERSION + 1)
    monkeypatch.setitem(t.MIGRATIONS, t.SCHEMA_VERSION, lambda conn: ran.append(1))
    engine = create_sql_engine(url)
    with engine.connect() as conn:
        version = schema_version(conn)
    engine.dispose()
    assert ran == [1] and version == t.SCHEMA_VERSION


# Migrations of files that older versions wrote: SQLite only, as those versions wrote only SQLite
# files (a PostgreSQL store starts at the current schema version).


def written_by(url: str, version: int, *ddl: str) -> Engine:
    """The file at ``url`` made to look like one written by schema ``version`` (``ddl`` takes out
    what came after it), then opened again: migrated."""
    engine = create_sql_engine(url)
    with engine.begin() as conn:
        for statement in ddl:
            conn.exec_driver_sql(statement)
        conn.execute(update(t.meta).values(value=str(version)))
    engine.dispose()
    return create_sql_engine(url)


NO_VALIDITY = ("ALTER TABLE records DROP COLUMN valid_from", "ALTER TABLE records DROP COLUMN valid_until")


def test_a_version_1_file_gets_the_reflection_tables_and_the_review_queue(tmp_path: Path) -> None:
    migrated = written_by(f"sqlite:///{tmp_path / 'v1.db'}", 1, "DROP TABLE reviews", "DROP TABLE reflection_runs",
                          "DROP TABLE run_changes", "ALTER TABLE record_versions DROP COLUMN run_id",
                          "ALTER TABLE replace_log DROP COLUMN run_id", *NO_VALIDITY)  # fmt: skip
    with migrated.connect() as conn:
        version = schema_version(conn)
        columns = {row[1] for row in conn.exec_driver_sql("PRAGMA table_info(record_versions)")}
        tables = {row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
    migrated.dispose()
    assert version == t.SCHEMA_VERSION and "run_id" in columns
    assert {"reflection_runs", "run_changes", "reviews", "job_runs"} <= tables


def test_a_version_3_file_gets_the_job_run_log(tmp_path: Path) -> None:
    from sqlalchemy.exc import IntegrityError

    migrated = written_by(f"sqlite:///{tmp_path / 'v3.db'}", 3, "DROP TABLE job_runs", *NO_VALIDITY)
    with migrated.connect() as conn:
        assert schema_version(conn) == t.SCHEMA_VERSION
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
        for statement in NO_VALIDITY:
            conn.exec_driver_sql(statement)
        conn.execute(update(t.meta).values(value="4"))
    store.close()
    migrated = SqlMemoryStore(create_sql_engine(url))
    again = migrated.get(event.id)
    migrated.close()
    assert again.valid_from == said and again.valid_until is None and again.content == "以后先给结论"


def test_a_version_6_file_gets_the_index_that_counts_messages_since_a_time(tmp_path: Path) -> None:
    migrated = written_by(f"sqlite:///{tmp_path / 'v6.db'}", 6, "DROP INDEX ix_records_user_time")
    with migrated.connect() as conn:
        version = schema_version(conn)
        plan = conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM records"
            " WHERE user_id = 'u' AND kind = 'event' AND role = 'user' AND at > '2026-01-01'"
        ).all()
    migrated.dispose()
    assert version == t.SCHEMA_VERSION
    assert "ix_records_user_time" in " ".join(str(row[-1]) for row in plan)


def test_a_version_7_file_gets_the_tag_table_and_waits_for_its_tags(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v7.db'}"
    store = SqlMemoryStore(create_sql_engine(url))
    store.add_events([NewEvent("u", "user", "Caroline moved from Sweden in 2019", T0, "d1")])
    store.close()
    migrated = written_by(url, 7, "DROP TABLE record_tags")
    with migrated.connect() as conn:
        version = schema_version(conn)
        pending = conn.execute(select(t.meta.c.value).where(t.meta.c.key == t.TAGS_PENDING)).scalar()
        links = conn.execute(select(func.count()).select_from(t.record_tags)).scalar_one()
    migrated.dispose()
    assert version == t.SCHEMA_VERSION and pending == "1" and links == 0  # tagged by the runtime on open


def test_other_users_are_seen_from_either_side(store: SqlMemoryStore) -> None:
    assert not store.has_other_users("m")
    store.add_events([NewEvent("m", "user", "hello", T0, "dm")])
    assert not store.has_other_users("m") and store.has_other_users("a") and store.has_other_users("z")
    store.add_events([NewEvent("a", "user", "hi", T0, "da")])
    assert store.has_other_users("m") and store.has_other_users("a")


def test_a_file_is_backed_up_before_it_is_migrated_and_only_then(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    store = SqlMemoryStore.from_url(url)
    (ev,), _ = store.add_events([event("u", "以后回答先给结论")])
    store.close()
    assert not list(tmp_path.glob("*.bak"))  # opened at the current version: no copy
    migrated = written_by(url, 4, *NO_VALIDITY)  # as schema 4 left it, then opened again
    migrated.dispose()
    backup = tmp_path / "memory.db.schema-v4.bak"
    assert backup.exists() and not list(tmp_path.glob("*.partial"))
    copy = sqlite3.connect(backup)
    try:
        version = copy.execute(f"SELECT value FROM {t.meta.name} WHERE key = 'schema_version'").fetchone()[0]
        columns = {row[1] for row in copy.execute("PRAGMA table_info(records)")}
        content = copy.execute("SELECT content FROM records WHERE id = ?", (ev.id,)).fetchone()[0]
    finally:
        copy.close()
    assert version == "4" and "valid_until" not in columns and content == "以后回答先给结论"  # the file before
    reopened = SqlMemoryStore.from_url(url)
    assert reopened.get(ev.id).content == "以后回答先给结论"
    reopened.close()
    assert sorted(p.name for p in tmp_path.glob("*.bak")) == ["memory.db.schema-v4.bak"]
