"""The daily ``backup`` job (``backup.folder``, ``backup.keep``): a backup ``tianma restore`` reads,
and only the job's own oldest backups pruned."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tianma.scheduler import Scheduler, builtin_jobs
from tianma.settings import Settings
from tianma.storage.backup import MANIFEST, read

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def test_no_backup_job_without_a_folder(tmp_path: Path) -> None:
    assert "backup" not in {j.name for j in builtin_jobs(Settings(home=tmp_path))}
    jobs = builtin_jobs(Settings(home=tmp_path, backup={"folder": tmp_path / "b"}))
    assert [j.name for j in jobs][-1] == "backup" and jobs[-1].period == "daily"


def test_the_job_backs_up_the_home_and_keeps_the_newest(
    tmp_path: Path, make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder
) -> None:
    folder = tmp_path / "usb"
    rt = make_runtime(embedder=char_embedder, backup={"folder": folder, "keep": 2}, timezone="Asia/Shanghai")
    rt.ingest("u", [{"role": "user", "text": "我对花生过敏", "at": T0, "dialogue_id": "d1"}])
    folder.mkdir()
    for day in ("2020-01-01", "2020-01-02", "2020-01-03"):  # the job's earlier backups
        (folder / f"tianma-backup-{day}").mkdir()
        (folder / f"tianma-backup-{day}" / MANIFEST).write_text("{}", encoding="utf-8")
    (folder / "tianma-backup-notes").mkdir()  # not a backup: no manifest
    (folder / "photos").mkdir()

    run = Scheduler(rt).run("backup", force=True)
    assert run.status == "ok", run.error
    today = f"tianma-backup-{datetime.now(UTC).astimezone(rt.settings.zone):%Y-%m-%d}"
    backup = read(folder / today)  # every file checked against its manifest
    assert "tianma.db" in backup.files
    assert sorted(p.name for p in folder.iterdir()) == sorted(["photos", today, "tianma-backup-2020-01-03",
                                                               "tianma-backup-notes"])  # fmt: skip
    assert run.report["pruned"] == ["tianma-backup-2020-01-01", "tianma-backup-2020-01-02"]

    again = Scheduler(rt).run("backup", force=True)  # the same day twice: the folder exists
    assert again.status == "failed" and "not empty" in (again.error or "")
