"""``tianma export`` beside an open runtime, then ``tianma restore FILE`` into an empty home: every
table the same, user by user, the same memory history and the same search answers; one user's
export, restored beside another user; a bad file changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import RuntimeFactory
from tests.integration.test_reflection import T0, reflection_model
from tests.unit.storage.test_export import live_through, rules, tables
from tianma.cli import app
from tianma.errors import ConfigError, InvalidInputError
from tianma.storage.export import TABLES

runner = CliRunner(env={"COLUMNS": "200", "TIANMA_EMBEDDER__THREADS": "1"})


def test_export_then_restore_into_an_empty_home_gives_the_same_tables_history_and_search(
    tmp_path: Path, make_runtime: RuntimeFactory
) -> None:
    rt = make_runtime(chat_model=reflection_model(rules), policies={"epsilon": 0.0})
    live_through(rt, "u")
    rt.chat("v", "我对花生过敏。", dialogue_id="v-1", at=T0)
    before = {user: tables(rt.store.engine, user) for user in ("u", "v")}
    assert all(before["u"].values())
    changed = [r for r in rt.memories("u") if r.version > 1]
    assert changed  # a record with earlier versions: its history is more than one line
    history = {r.id: rt.history(r.id) for r in changed}
    queries = ["含糖饮料", "Python 代码问题", "花生"]
    found = {(u, q): [(h.id, h.content, round(h.score, 5)) for h in rt.search(u, q, k=4)]
             for u in ("u", "v") for q in queries}  # fmt: skip

    out = tmp_path / "everyone.jsonl"
    done = runner.invoke(app, ["export", "--home", str(tmp_path / "home"), "--out", str(out)])  # runtime still open
    assert done.exit_code == 0, done.output
    rows = sum(len(r) for user in before.values() for r in user.values())
    assert f"exported {rows} rows of 2 user(s)" in done.output and "已导出" in done.output
    assert f"records {len(before['u']['records']) + len(before['v']['records'])}" in done.output
    assert out.stat().st_mode & 0o077 == 0 and not out.with_name(out.name + ".partial").exists()
    rt.close()

    done = runner.invoke(app, ["restore", str(out), "--home", str(tmp_path / "restored")])
    assert done.exit_code == 0, done.output
    assert f"restored {rows} rows of u, v" in done.output and "已恢复" in done.output
    again = make_runtime(name="restored")
    assert {user: tables(again.store.engine, user) for user in ("u", "v")} == before
    assert {rid: again.history(rid) for rid in history} == history
    assert {(u, q): [(h.id, h.content, round(h.score, 5)) for h in again.search(u, q, k=4)]
            for u in ("u", "v") for q in queries} == found  # fmt: skip
    assert all(diff.clean for diff in again.check_index())
    again.close()

    refused = runner.invoke(app, ["restore", str(out), "--home", str(tmp_path / "restored")])
    assert isinstance(refused.exception, ConfigError) and "already has data" in str(refused.exception)


def test_one_users_export_and_a_bad_file_that_changes_nothing(tmp_path: Path, make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    rt.chat("u", "我住在杭州", dialogue_id="u1", at=T0)
    rt.chat("v", "I am allergic to peanuts", dialogue_id="v1", at=T0)
    rt.close()
    home, out = tmp_path / "home", tmp_path / "v.jsonl"
    assert runner.invoke(app, ["export", "--user", "v", "--home", str(home), "--out", str(out)]).exit_code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["users"] == ["v"]
    assert {json.loads(line)["row"]["user_id"] for line in lines[1:]} == {"v"}
    assert {json.loads(line)["table"] for line in lines[1:]} <= {table.name for table in TABLES}

    again = runner.invoke(app, ["export", "--user", "v", "--home", str(home), "--out", str(out)])
    assert isinstance(again.exception, ConfigError) and "already exists" in str(again.exception)
    nowhere = runner.invoke(app, ["export", "--home", str(home), "--out", str(tmp_path / "no" / "such" / "v.jsonl")])
    assert isinstance(nowhere.exception, ConfigError) and "cannot write" in str(nowhere.exception)
    empty = runner.invoke(app, ["export", "--home", str(tmp_path / "nothing"), "--out", str(tmp_path / "n.jsonl")])
    assert isinstance(empty.exception, ConfigError) and "no memory store" in str(empty.exception)

    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines, "{not json"]) + "\n", encoding="utf-8")
    bad = runner.invoke(app, ["restore", str(broken), "--home", str(tmp_path / "target")])
    assert isinstance(bad.exception, InvalidInputError) and f"line {len(lines) + 1}" in str(bad.exception)
    assert not (tmp_path / "target" / "tianma.db").exists()  # checked before the store was opened

    done = runner.invoke(app, ["restore", str(out), "--home", str(home)])  # u stays, v is refused
    assert isinstance(done.exception, ConfigError) and "v already has data" in str(done.exception)
    done = runner.invoke(app, ["restore", str(out), "--home", str(tmp_path / "target")])
    assert done.exit_code == 0, done.output
    u_only = tmp_path / "u.jsonl"
    assert runner.invoke(app, ["export", "--user", "u", "--home", str(home), "--out", str(u_only)]).exit_code == 0
    done = runner.invoke(app, ["restore", str(u_only), "--home", str(tmp_path / "target")])  # beside v
    assert done.exit_code == 0, done.output
    restored = make_runtime(name="target")
    assert sorted(restored.store.users()) == ["u", "v"]
    assert restored.search("v", "peanut allergy")[0].content == "I am allergic to peanuts"
    assert restored.search("u", "杭州")[0].content == "我住在杭州"
