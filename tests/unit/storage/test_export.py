"""Export and restore of the store (tianma.storage.export, .export_restore): a round trip
compared table by table, one user only, a consistent snapshot beside a writer, and files that
are malformed, of another format, too new, or of an older schema."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tests.integration.test_reflection import T0, reflection_model
from tianma import Runtime
from tianma.errors import ConfigError, InvalidInputError
from tianma.storage import export_restore
from tianma.storage import schema as t
from tianma.storage.export import FORMAT_VERSION, TABLES, export
from tianma.storage.export_restore import restore, scan
from tianma.storage.records import NewEvent
from tianma.storage.sql_store import SqlMemoryStore

SAID = {  # phrasings only the scripted LLM learns from
    "含糖饮料我是一口都不碰的": ("preference.diet.sugar.general", "不喜欢含糖饮料"),
    "现在含糖饮料我也照喝了": ("preference.diet.sugar.general", "喜欢喝含糖饮料"),
}
CODE = ["Python 的列表推导式怎么写", "怎么写单元测试", "git rebase 是什么", "SQL 的 join 有几种"]
STRATEGY = "当用户问代码问题时，回答简短"


def rules(event_id: str, text: str) -> dict[str, list[dict[str, Any]]]:
    """Facts from SAID; a caution-zone strategy (queued for review) from each message saying 教我."""
    if "教我" in text:
        return {"new_strategies": [{"trigger": {"domains": ["tech"]}, "action": STRATEGY, "source_event_ids": [event_id]}]}
    for said, (key, content) in SAID.items():
        if said in text:
            return {"new_facts": [{"key": key, "content": content, "source_event_ids": [event_id]}]}
    return {}


def live_through(rt: Runtime, user: str) -> None:
    """Chat turns, reflections that create, confirm and supersede a fact, a strategy waiting in
    the review queue, feedback and an ended dialogue: a row in every exported table."""
    for day in range(2):
        rt.chat(user, "含糖饮料我是一口都不碰的", dialogue_id=f"{user}-a{day}", at=T0 + timedelta(days=day))
        rt.reflect(user, at=T0 + timedelta(days=day, hours=1))
    fix = rt.chat(user, "不对，现在含糖饮料我也照喝了", dialogue_id=f"{user}-b", at=T0 + timedelta(days=2))
    rt.feedback(fix.event_id, "like", at=T0 + timedelta(days=2, minutes=1))
    rt.end_dialogue(f"{user}-b", at=T0 + timedelta(days=2, minutes=2))
    for day, question in enumerate(CODE, start=3):
        rt.chat(user, f"{question}，教我", dialogue_id=f"{user}-t{day}", at=T0 + timedelta(days=day))
        rt.reflect(user, at=T0 + timedelta(days=day, hours=1))
    rt.chat(user, "推荐一款含糖饮料", dialogue_id=f"{user}-c", at=T0 + timedelta(days=8))


def tables(engine: Engine, user: str) -> dict[str, list[dict[str, Any]]]:
    """Every exported table's rows of ``user``, every column, by primary key."""
    with engine.connect() as conn:
        return {
            table.name: [t.row_dict(r) for r in conn.execute(
                select(table).where(table.c.user_id == user).order_by(*table.primary_key.columns))]
            for table in TABLES
        }  # fmt: skip


@pytest.fixture
def lived(make_runtime: RuntimeFactory) -> Runtime:
    rt = make_runtime(chat_model=reflection_model(rules), embedder=CharacterEmbedder(), policies={"epsilon": 0.0})
    live_through(rt, "u")
    rt.chat("v", "我对花生过敏。", dialogue_id="v-1", at=T0)
    rt.reflect("v", at=T0 + timedelta(hours=1))
    return rt


def test_a_round_trip_restores_every_table_row_for_row(
    lived: Runtime, make_runtime: RuntimeFactory, tmp_path: Path
) -> None:
    before = {user: tables(lived.store.engine, user) for user in ("u", "v")}
    assert all(before["u"].values()), {name: len(rows) for name, rows in before["u"].items()}  # a row in each
    fact = next(r for r in lived.memories("u", kind="fact") if r.key == "preference.diet.sugar.general"
                and r.status == "deprecated")  # fmt: skip
    history, found = lived.history(fact.id), lived.search("u", "含糖饮料", k=3)
    done = export(lived.store.engine, tmp_path / "all.jsonl", "test", chunk=7)
    assert done.header.users == ("u", "v") and done.counts == {
        name: sum(len(before[user][name]) for user in before) for name in before["u"]
    }
    lived.close()

    empty = SqlMemoryStore.from_url(f"sqlite:///{tmp_path / 'restored.db'}")
    restored = restore(empty.engine, tmp_path / "all.jsonl")
    assert restored.counts == done.counts
    assert {user: tables(empty.engine, user) for user in ("u", "v")} == before
    empty.close()
    (tmp_path / "again").mkdir()
    (tmp_path / "restored.db").rename(tmp_path / "again" / "tianma.db")
    again = make_runtime(name="again", embedder=CharacterEmbedder())
    again.rebuild_index()
    assert again.history(fact.id) == history
    assert [(h.id, h.content) for h in again.search("u", "含糖饮料", k=3)] == [(h.id, h.content) for h in found]


def test_one_users_export_holds_only_their_rows_and_restores_beside_others(lived: Runtime, tmp_path: Path) -> None:
    done = export(lived.store.engine, tmp_path / "v.jsonl", "test", "v")
    lines = (tmp_path / "v.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["users"] == ["v"] and done.rows == len(lines) - 1 > 0
    assert {json.loads(line)["row"]["user_id"] for line in lines[1:]} == {"v"}
    assert done.counts == {name: len(rows) for name, rows in tables(lived.store.engine, "v").items()}
    with pytest.raises(InvalidInputError, match="nobody"):
        export(lived.store.engine, tmp_path / "nobody.jsonl", "test", "nobody")
    with pytest.raises(ConfigError, match="already exists"):
        export(lived.store.engine, tmp_path / "v.jsonl", "test", "v")

    other = SqlMemoryStore.from_url(f"sqlite:///{tmp_path / 'other.db'}")
    restore(other.engine, tmp_path / "v.jsonl")
    with pytest.raises(ConfigError, match="v already has data") as refused:
        restore(other.engine, tmp_path / "v.jsonl")  # never merged into a user who has rows
    assert "不会合并" in str(refused.value)
    assert tables(other.engine, "v") == tables(lived.store.engine, "v")


def test_replace_log_ids_taken_in_the_target_are_given_anew_in_order(lived: Runtime, tmp_path: Path) -> None:
    export(lived.store.engine, tmp_path / "u.jsonl", "test", "u")
    source = tables(lived.store.engine, "u")["replace_log"]
    other = SqlMemoryStore.from_url(f"sqlite:///{tmp_path / 'other.db'}")
    with other.engine.begin() as conn:  # another user's log already holds the ids
        for row in source:
            conn.execute(t.replace_log.insert().values({**row, "user_id": "w"}))
    restore(other.engine, tmp_path / "u.jsonl")
    restored = tables(other.engine, "u")["replace_log"]
    assert [r["id"] for r in restored] != [r["id"] for r in source]
    assert [{**r, "id": 0} for r in restored] == [{**r, "id": 0} for r in source]


def test_the_export_is_one_snapshot_while_another_connection_writes(
    make_runtime: RuntimeFactory, tmp_path: Path
) -> None:
    rt = make_runtime(embedder=CharacterEmbedder())
    for i in range(4):
        rt.chat("u", f"第{i}句话", dialogue_id=f"d{i}", at=T0 + timedelta(minutes=i))
    writer = SqlMemoryStore.from_url(rt.settings.sql_url)
    written: list[str] = []

    def write_once(done: int, total: int) -> None:  # a serve's commit in the middle of the export
        if not written:
            (event,), _ = writer.add_events([NewEvent(user_id="u", role="user", text="later", at=T0, dialogue_id="late")])
            written.append(event.id)

    done = export(rt.store.engine, tmp_path / "u.jsonl", "test", progress=write_once, chunk=1)
    writer.close()
    rows = [json.loads(line) for line in (tmp_path / "u.jsonl").read_text(encoding="utf-8").splitlines()[1:]]
    assert written and rt.store.get(written[0]).content == "later"  # committed during the export
    assert written[0] not in {r["row"]["id"] for r in rows if r["table"] == "records"}
    assert "late" not in {r["row"]["id"] for r in rows if r["table"] == "dialogues"}
    assert done.counts["records"] == 4 and done.counts["dialogues"] == 4


def write(path: Path, header: dict[str, Any], *rows: dict[str, Any] | str) -> Path:
    head = {"format": "tianma-export", "version": FORMAT_VERSION, "schema": t.SCHEMA_VERSION, "tianma": "x",
            "exported_at": "2026-04-06T09:00:00+00:00", "users": ["u"], **header}  # fmt: skip
    lines = [json.dumps(head), *(r if isinstance(r, str) else json.dumps(r) for r in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def a_record(**changes: Any) -> dict[str, Any]:
    row = {"id": "r1", "user_id": "u", "kind": "event", "content": "你好", "key": None, "scope": "global",
           "tags": [], "confidence": 1.0, "importance": 0.5, "hit_count": 0, "last_hit_at": None,
           "status": "active", "version": 1, "created_at": "2026-04-06T09:00:00+00:00",
           "updated_at": "2026-04-06T09:00:00+00:00", "provenance": {"source": "chat"}, "data": {},
           "dialogue_id": "d1", "role": "user", "speaker": None, "reply": None,
           "at": "2026-04-06T08:59:00+00:00", "external_id": None, "error": None,
           "valid_from": "2026-04-06T08:59:00+00:00", "valid_until": None}  # fmt: skip
    return {"table": "records", "row": {**row, **changes}}


def count(store: SqlMemoryStore) -> int:
    with store.engine.connect() as conn:
        return sum(len(conn.execute(select(table)).all()) for table in TABLES)


@pytest.mark.parametrize(
    ("header", "line", "error"),
    [
        ({"format": "tianma-backup"}, None, "not a tianma export"),
        ({"version": FORMAT_VERSION + 1}, None, "newer tianma.*upgrade tianma"),
        ({"schema": t.SCHEMA_VERSION + 1}, None, "store schema.*upgrade tianma"),
        ({}, '{"table": "records", "row": {"id": ', "line 3: not JSON"),
        ({}, '["records", {}]', "line 3: not "),
        ({}, json.dumps({"table": "job_runs", "row": {}}), "line 3: unknown table 'job_runs'"),
        ({}, json.dumps(a_record(user_id="w")), "line 3: a row of user 'w'"),
        ({}, json.dumps(a_record(created_at="yesterday")), "line 3: records: created_at"),
        ({}, json.dumps(a_record(created_at="2026-04-06T09:00:00")), "line 3: records: created_at"),
        ({}, json.dumps(a_record(confidence="high")), "line 3: records: confidence"),
        ({}, json.dumps(a_record(content=None)), "line 3: records: content may not be null"),
        ({}, json.dumps({"table": "records", "row": {**a_record()["row"], "extra": 1}}), "line 3: .*'extra'"),
    ],
)
def test_a_bad_file_is_refused_and_nothing_is_written(
    store: SqlMemoryStore, tmp_path: Path, header: dict[str, Any], line: str | None, error: str
) -> None:
    rows = [a_record(id="ok"), *([line] if line is not None else [])]
    path = write(tmp_path / "bad.jsonl", header, *rows)
    with pytest.raises(InvalidInputError, match=error):
        restore(store.engine, path)
    assert count(store) == 0
    assert restore(store.engine, write(tmp_path / "good.jsonl", {}, a_record(id="ok"))).rows == 1  # the same row is fine


def test_rows_of_an_older_schema_get_what_its_migrations_gave_existing_rows(store: SqlMemoryStore, tmp_path: Path) -> None:
    record = a_record()["row"]
    for gone in ("valid_from", "valid_until"):  # schema 1 had no validity, no run ids on history
        del record[gone]
    record["legacy_score"] = 3  # a column this schema no longer has
    version = {"record_id": "r1", "version": 1, "user_id": "u", "content": "旧", "confidence": 0.5,
               "status": "pending", "data": {}, "changed_at": "2026-04-06T10:00:00+00:00", "reason": "r", "evidence": []}  # fmt: skip
    log = {"user_id": "u", "old_id": "r0", "new_id": "r1", "reason": "fixed", "evidence": ["e"],
           "at": "2026-04-06T10:00:00+00:00"}  # no id, no run_id  # fmt: skip
    path = write(tmp_path / "old.jsonl", {"schema": 1},
                 {"table": "records", "row": record}, {"table": "record_versions", "row": version},
                 {"table": "replace_log", "row": log})  # fmt: skip
    restore(store.engine, path)
    got = tables(store.engine, "u")
    (row,) = got["records"]
    assert row["valid_from"] == row["at"] and row["at"] is not None and row["valid_until"] is None
    assert "legacy_score" not in row and row["content"] == "你好"
    assert got["record_versions"][0]["run_id"] is None and got["record_versions"][0]["content"] == "旧"
    assert got["replace_log"][0]["run_id"] is None and got["replace_log"][0]["id"] >= 1

    no_default = dict(version)
    del no_default["reason"]  # required then and now, with no default: it cannot be made up
    with pytest.raises(InvalidInputError, match="line 2: record_versions: reason is missing"):
        restore(store.engine, write(tmp_path / "worse.jsonl", {"schema": 1, "users": ["x"]},
                                    {"table": "record_versions", "row": {**no_default, "user_id": "x"}}))  # fmt: skip


def test_an_older_format_version_is_migrated_row_by_row(
    store: SqlMemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def rename(table: str, row: dict[str, Any]) -> dict[str, Any]:  # a format 2 that renamed a field
        return {("content" if k == "text" else k): v for k, v in row.items()} if table == "records" else row

    monkeypatch.setattr(export_restore, "FORMAT_VERSION", FORMAT_VERSION + 1)
    monkeypatch.setitem(export_restore.FORMAT_MIGRATIONS, FORMAT_VERSION + 1, rename)
    old = a_record()
    old["row"]["text"] = old["row"].pop("content")
    restore(store.engine, write(tmp_path / "v1.jsonl", {"version": FORMAT_VERSION}, old))
    assert [r["content"] for r in tables(store.engine, "u")["records"]] == ["你好"]


def test_scan_counts_without_writing(tmp_path: Path) -> None:
    checked, log_ids = scan(write(tmp_path / "f.jsonl", {}, a_record(id="a"), "", a_record(id="b")))
    assert checked.counts["records"] == 2 and checked.rows == 2 and log_ids == set()
    with pytest.raises(InvalidInputError, match="cannot read"):
        scan(tmp_path / "missing.jsonl")


def test_every_table_of_a_user_is_exported() -> None:
    home_level = {"tianma_meta", "job_runs", "jobs", "vector_outbox", "record_tags", "experiments"}  # the home's, derived, or work to do
    assert {table.name for table in TABLES} == set(t.metadata.tables) - home_level  # a new table is not forgotten
    assert all("user_id" in table.c for table in TABLES)
