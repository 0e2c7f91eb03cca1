"""``tianma backup`` and ``tianma restore``: a consistent copy of a data home, taken while ``tianma
serve`` runs, and brought back into an empty home (the vector index rebuilt from the store);
``tianma restore FILE`` reads a ``tianma export`` file instead (:mod:`tianma.cli.export`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from tianma.backups import back_up, store_file
from tianma.cli.app import HomeOption, app, console, plain, settings_from
from tianma.cli.connection import require_no_server
from tianma.cli.export import restore_export
from tianma.cli.home import require_writable
from tianma.cli.memory import rebuild_with_progress
from tianma.errors import ConfigError
from tianma.storage import backup as snapshots

OutOption = typer.Option(None, "--out", help="New folder for the backup (default: ./tianma-backup-<UTC time>).")


@app.command()
def backup(home: Path | None = HomeOption, out: Path | None = OutOption) -> None:
    """Back up the data home — also while `tianma serve` runs: the memory store, the short-term
    window and the spans through SQLite's online backup API, and each user's chat line history.
    The vector index is rebuilt on restore. 备份数据目录（服务运行时也可以）。"""
    settings = settings_from(home)
    folder = out or Path.cwd() / f"tianma-backup-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    taken = back_up(settings, folder)
    console.print(*plain(f"backed up {len(taken.files)} file(s) to {taken.folder} / 已备份到 {taken.folder}"))


@app.command()
def restore(source: Path = typer.Argument(..., help="A folder written by `tianma backup`, or a file written by `tianma export`."),
            home: Path | None = HomeOption) -> None:  # fmt: skip
    """Bring a backup folder back into an empty data home, or the users of an export file into
    a home where they have nothing, then rebuild the vector and keyword indexes (with no server
    running). 把备份或导出文件恢复到数据目录，并重建索引。"""
    settings = settings_from(home)
    require_no_server(settings, "tianma restore")
    require_writable(settings)
    if source.is_file():
        restore_export(settings, source)
        return
    taken = snapshots.read(source)
    store = store_file(settings)
    if store.exists():
        raise ConfigError(
            f"{store} exists: restore only into an empty data home (move the current one away first, "
            "or --home a new folder) / 只能恢复到空的数据目录"
        )
    snapshots.put_back(taken, settings.home.expanduser())
    settings = settings_from(home)  # the restored tianma.toml: its embedder builds the index
    count = rebuild_with_progress(settings)
    console.print(*plain(
        f"restored {len(taken.files)} file(s) from {source} (taken {taken.created:%Y-%m-%d %H:%M} UTC by tianma "
        f"{taken.tianma}), indexed {count} records / 已恢复并重建索引"
    ))  # fmt: skip
