"""A backup of a whole data home, as ``tianma backup`` takes it and as the daily ``backup`` job
of ``tianma serve`` does (``backup.folder``), with the job's retention (``backup.keep``)."""

from __future__ import annotations

import shutil
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from sqlalchemy import make_url

from tianma.errors import ConfigError
from tianma.settings import Settings
from tianma.storage import backup as snapshots
from tianma.storage.schema import version_at

JOB_PREFIX = "tianma-backup-"
"""Folders the job writes: ``tianma-backup-<local date>``; only those are pruned."""


def package_version() -> str:
    """tianma's version as the installed package's metadata records it (``pyproject.toml``):
    what ``tianma --version`` prints and what a backup or export records."""
    try:
        return version("tianma")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "unknown (not installed / 未安装)"


def store_file(settings: Settings) -> Path:
    """The SQLite file of the store.

    Raises:
        ConfigError: the store is not a SQLite file (PostgreSQL: use its own tools).
    """
    file = snapshots.sqlite_file(settings.sql_url)
    if file is None:
        raise ConfigError(
            f"the memory store ({make_url(settings.sql_url).get_backend_name()}) is not a SQLite file: back it up "
            "with its own tools (PostgreSQL: pg_dump) / 记忆库不是 SQLite 文件，请用数据库自带工具备份"
        )
    return file


def back_up(settings: Settings, folder: Path) -> snapshots.Backup:
    """Back up the home of ``settings`` into the new ``folder`` — also beside a running server.

    Raises:
        ConfigError: no store yet, a store that is not SQLite, or ``folder`` is not new.
    """
    store = store_file(settings)
    if not store.is_file():
        raise ConfigError(f"{settings.home} holds no memory store yet: nothing to back up / 尚无记忆库，无需备份")
    return snapshots.take([store, settings.checkpoint_path, settings.spans_path], settings.home.expanduser(),
                         folder, package_version(), version_at(settings.sql_url))  # fmt: skip


def daily_backup(settings: Settings, at: datetime) -> dict[str, object]:
    """The ``backup`` job: a backup named by the local date of ``at`` in ``backup.folder``, then
    only the newest ``backup.keep`` of the job's backups (folders with a manifest) are kept."""
    root = settings.backup.folder
    if root is None:
        raise ConfigError("backup.folder is not set / 未设置 backup.folder")
    root = root.expanduser()
    taken = back_up(settings, root / f"{JOB_PREFIX}{at.astimezone(settings.zone):%Y-%m-%d}")
    ours = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(JOB_PREFIX)
                  and (p / snapshots.MANIFEST).is_file())  # fmt: skip
    pruned = ours[: max(0, len(ours) - settings.backup.keep)]
    for old in pruned:
        shutil.rmtree(old)
    return {"folder": str(taken.folder), "files": len(taken.files), "pruned": [p.name for p in pruned]}
