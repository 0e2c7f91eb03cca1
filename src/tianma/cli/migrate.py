"""``tianma migrate --to URL``: move a home's SQLite store to PostgreSQL — every table copied and
compared, the keyword index rebuilt there, the dialogue windows carried over. The vectors stay in
the home (or wherever ``qdrant.url`` points); the SQLite file is left as it was."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import func, make_url, select

from tianma.cli.app import HomeOption, app, console, open_runtime, plain, settings_from
from tianma.errors import ConfigError
from tianma.storage.sql_migration import compare_stores, copy_store, data_tables
from tianma.storage.sql_store import create_sql_engine


@app.command("migrate")
def migrate(
    to: str = typer.Option(..., "--to", help="SQLAlchemy URL of an empty PostgreSQL database / 目标数据库"),
    home: Path | None = HomeOption,
) -> None:
    """Move the home's memory store to PostgreSQL (stop tianma serve first) / 把记忆库迁移到 PostgreSQL。"""
    settings = settings_from(home)
    source_url, target = settings.sql_url, make_url(to)
    if make_url(source_url).get_backend_name() != "sqlite":
        raise ConfigError(f"tianma migrate moves a SQLite store; this home's is {make_url(source_url).get_backend_name()}")
    if target.get_backend_name() != "postgresql":
        raise ConfigError("--to: a PostgreSQL URL, e.g. postgresql+psycopg://user:password@host/database")
    moved = settings.model_copy(update={"sql": settings.sql.model_copy(update={"url": to})})
    # the runtime first: a tianma serve holding this home stops the move before anything is copied
    with open_runtime(moved) as rt:
        _copy(source_url, to)
        repaired = rt.repair_index()  # the keyword index there is empty: every record is "missing"
        windows = rt.take_windows(settings.checkpoint_path)
    console.print(
        f"{repaired.indexed} record(s) indexed for keyword search, {windows} dialogue window(s) carried over. "
        f"Now set sql.url (TIANMA_SQL__URL) to the new database and start tianma serve / "
        f"已迁移：请把 sql.url 设为新数据库后再启动",
        markup=False,
    )


def _copy(source_url: str, to: str) -> None:
    """Copy with a progress bar, compare, show the comparison; raise if any table differs."""
    source, dest = create_sql_engine(source_url), create_sql_engine(to)
    try:
        with source.connect() as conn:
            total = sum(conn.execute(select(func.count()).select_from(t)).scalar_one() for t in data_tables())
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as bar:
            task = bar.add_task("copying rows / 复制记录", total=total)
            copy_store(source, dest, lambda _table, n: bar.advance(task, n))
        tables = compare_stores(source, dest)
    finally:
        source.dispose()
        dest.dispose()
    shown = Table(title="tables compared / 逐表核对")
    for col in ("table", "SQLite", "PostgreSQL", "same"):
        shown.add_column(col)
    for row in tables:
        shown.add_row(*plain(row.table, row.source_rows, row.target_rows, "yes" if row.same else "NO"))
    console.print(shown)
    if not all(row.same for row in tables):
        raise ConfigError("the copy differs from the source (table above): the home still uses SQLite / 复制结果不一致")
