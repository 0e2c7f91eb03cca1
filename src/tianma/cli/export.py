"""``tianma export``: everything of a user (or of every user) as one JSON-lines file, written
also while ``tianma serve`` runs; ``tianma restore FILE`` (:mod:`tianma.cli.backup`) reads it
back into a home where those users have nothing (:func:`restore_export`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError

from tianma.backups import package_version
from tianma.cli.app import AllUsersOption, HomeOption, app, console, plain, settings_from
from tianma.cli.home import home_access, open_read_only_store
from tianma.cli.memory import rebuild_with_progress
from tianma.errors import ConfigError
from tianma.settings import Settings
from tianma.storage import export as exporting
from tianma.storage import export_restore
from tianma.storage.backup import sqlite_file
from tianma.storage.schema import SCHEMA_VERSION, version_at
from tianma.storage.sql_store import SqlMemoryStore

OutOption = typer.Option(None, "--out", help="New file to write (default: ./tianma-export-<UTC time>.jsonl).")


def _store_to_read(settings: Settings) -> SqlMemoryStore:
    """The home's store for reading, written to only to migrate an older one (a store of this
    schema — a live server's — is opened without the schema check's write); read-only on a
    read-only home.

    Raises:
        ConfigError: the home holds no store yet, or one of a newer tianma.
    """
    file = sqlite_file(settings.sql_url)
    if file is not None and not file.is_file():
        raise ConfigError(f"{settings.home.expanduser()} holds no memory store yet: nothing to export / 尚无记忆库，无需导出")
    if home_access(settings) == "read-only":
        return open_read_only_store(settings)
    with suppress(SQLAlchemyError):  # unreachable: from_url says so in one line
        if version_at(settings.sql_url) == SCHEMA_VERSION:
            return SqlMemoryStore(create_engine(settings.sql_url))
    return SqlMemoryStore.from_url(settings.sql_url)


@contextmanager
def _bar(what: str) -> Iterator[exporting.Progress]:
    """A progress bar over rows, as a ``progress(done, total)`` callback."""
    columns = (TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("rows", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _per_table(done: exporting.Exported) -> str:
    return ", ".join(f"{name} {count}" for name, count in done.counts.items())


@app.command()
def export(user: str | None = AllUsersOption, out: Path | None = OutOption, home: Path | None = HomeOption) -> None:
    """Export everything of a user — events, every version of every record, the replace log,
    strategies, signals, reflection runs, reviews — as one JSON-lines file (docs/export-format.md),
    also while `tianma serve` runs. 导出用户的全部数据（服务运行时也可以）。"""
    settings = settings_from(home)
    target = out or Path.cwd() / f"tianma-export-{datetime.now(UTC):%Y%m%d-%H%M%S}.jsonl"
    store = _store_to_read(settings)
    try:
        with _bar("exporting / 导出") as progress:
            done = exporting.export(store.engine, target, package_version(), user, progress=progress)
    finally:
        store.close()
    console.print(*plain(
        f"exported {done.rows} rows of {len(done.header.users)} user(s) to {done.path}: {_per_table(done)} "
        f"/ 已导出 {done.rows} 行"
    ))  # fmt: skip


def restore_export(settings: Settings, source: Path) -> None:
    """``tianma restore FILE``: the file checked whole before the store is even opened (a bad
    file leaves the home as it was), its rows added in one transaction, the indexes rebuilt.
    The caller has checked that no server runs and the home is writable.

    Raises:
        InvalidInputError: the file is not a readable tianma export of a format this tianma knows.
        ConfigError: a user of the file already has data in the home.
    """
    export_restore.scan(source)
    settings.home.expanduser().mkdir(parents=True, exist_ok=True, mode=0o700)
    store = SqlMemoryStore.from_url(settings.sql_url)
    try:
        with _bar("restoring / 恢复") as progress:
            done = export_restore.restore(store.engine, source, progress=progress)
    finally:
        store.close()
    count = rebuild_with_progress(settings)
    header = done.header
    console.print(*plain(
        f"restored {done.rows} rows of {', '.join(header.users) or 'no user'} from {source} (exported "
        f"{header.exported_at:%Y-%m-%d %H:%M} UTC by tianma {header.tianma}): {_per_table(done)}; indexed {count} "
        f"records / 已恢复 {done.rows} 行并重建索引"
    ))  # fmt: skip
