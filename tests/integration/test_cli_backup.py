"""``tianma backup`` while the store is being written, then ``tianma restore`` into an empty home:
no row committed before the backup began is lost, and the restored home searches and checks clean."""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import RuntimeFactory
from tianma.cli import app
from tianma.errors import ConfigError
from tianma.settings import Settings
from tianma.storage.backup import MANIFEST, read
from tianma.storage.records import NewEvent
from tianma.storage.sql_store import SqlMemoryStore

runner = CliRunner(env={"COLUMNS": "200", "TIANMA_EMBEDDER__THREADS": "1"})
T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def _ids(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM records")}


def test_a_backup_taken_during_writes_restores_every_row_committed_before_it(
    tmp_path: Path, make_runtime: RuntimeFactory
) -> None:
    rt = make_runtime(name="home")
    rt.ingest("u", [{"role": "user", "text": f"第{i}条：我住在杭州，喜欢喝龙井", "at": T0 + timedelta(minutes=i), "dialogue_id": "d1"}
                    for i in range(20)])  # fmt: skip
    rt.ingest("u", [{"role": "user", "text": "I am allergic to peanuts", "at": T0 + timedelta(hours=1), "dialogue_id": "d2"}])
    rt.close()
    home = tmp_path / "home"
    url = Settings(home=home).sql_url
    (home / "tianma.toml").write_text('timezone = "Asia/Shanghai"\n', encoding="utf-8")

    committed: list[tuple[datetime, str]] = []  # (when the commit returned, id)
    stop = threading.Event()

    def write() -> None:  # another process's writes, as a running serve's would be
        store = SqlMemoryStore.from_url(url)
        try:
            n = 0
            while not stop.is_set():
                (ev,), _ = store.add_events([NewEvent(user_id="w", role="user", text=f"stream {n}", at=T0, dialogue_id="w1")])
                committed.append((datetime.now(UTC), ev.id))
                n += 1
        finally:
            store.close()

    writer = threading.Thread(target=write)
    writer.start()
    while len(committed) < 20:  # the stream is flowing when the backup starts
        threading.Event().wait(0.01)
    began = datetime.now(UTC)
    done = runner.invoke(app, ["backup", "--home", str(home), "--out", str(tmp_path / "b")])
    stop.set()
    writer.join()
    assert done.exit_code == 0, done.output
    before = {i for at, i in committed if at < began}
    in_backup = _ids(tmp_path / "b" / "tianma.db")
    assert before and before <= in_backup  # nothing committed before the backup began is lost
    assert _ids(home / "tianma.db") >= in_backup

    restored = tmp_path / "restored"
    done = runner.invoke(app, ["restore", str(tmp_path / "b"), "--home", str(restored)])
    assert done.exit_code == 0, done.output
    assert _ids(restored / "tianma.db") == in_backup
    assert (restored / "tianma.toml").read_text(encoding="utf-8") == 'timezone = "Asia/Shanghai"\n'
    assert (tmp_path / "b" / "tianma.toml").stat().st_mode & 0o077 == 0  # settings may hold keys
    again = make_runtime(name="restored")
    assert all(diff.clean for diff in again.check_index())
    assert again.search("u", "peanut allergy")[0].content == "I am allergic to peanuts"


def test_restore_refuses_a_home_that_has_a_store_and_a_changed_backup(
    tmp_path: Path, make_runtime: RuntimeFactory
) -> None:
    rt = make_runtime(name="home")
    rt.ingest("u", [{"role": "user", "text": "我对花生过敏", "at": T0, "dialogue_id": "d1"}])
    rt.close()
    assert runner.invoke(app, ["backup", "--home", str(tmp_path / "home"), "--out", str(tmp_path / "b")]).exit_code == 0
    refused = runner.invoke(app, ["restore", str(tmp_path / "b"), "--home", str(tmp_path / "home")])
    assert isinstance(refused.exception, ConfigError) and "empty data home" in str(refused.exception)
    again = runner.invoke(app, ["backup", "--home", str(tmp_path / "home"), "--out", str(tmp_path / "b")])
    assert isinstance(again.exception, ConfigError) and "not empty" in str(again.exception)  # never overwrites
    with (tmp_path / "b" / "tianma.db").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ConfigError, match="changed"):
        read(tmp_path / "b")
    manifest = json.loads((tmp_path / "b" / MANIFEST).read_text(encoding="utf-8"))
    manifest["files"] = {"/etc/hostname": "0" * 64}  # a manifest never writes outside the home
    (tmp_path / "b" / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ConfigError, match="outside"):
        read(tmp_path / "b")
    (tmp_path / "b" / MANIFEST).unlink()
    with pytest.raises(ConfigError, match="not a tianma backup"):
        read(tmp_path / "b")
