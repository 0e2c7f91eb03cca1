"""Whether the CLI can use its data home, and a read-only home for the commands that only read.

A home that is a file, or that cannot be created, or that this user may not write, would fail
deep in SQLite, Qdrant or the span store with a long traceback. The CLI checks it first and says
in one line what is wrong and what to do; on a read-only home the commands that only read SQL
(``memory list``, ``review``, ``jobs list``, ``doctor`` …) open the store read-only and work.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import TracebackType
from typing import Literal

from sqlalchemy import create_engine, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from tianma.errors import BackendUnavailableError, ConfigError
from tianma.runtime import Runtime
from tianma.settings import Settings
from tianma.storage import schema as t
from tianma.storage.sql_store import SqlMemoryStore

Access = Literal["writable", "read-only"]
FIX = "point --home or TIANMA_HOME at a folder you can write"


def is_writable(folder: Path) -> bool:
    """Whether this process may create files in ``folder`` (``os.access`` knows read-only mounts
    and ACLs; note that root may write anywhere, which is why tests replace this check)."""
    return os.access(folder, os.W_OK | os.X_OK)


def home_access(settings: Settings) -> Access:
    """How this process may use ``settings.home`` (a home that does not exist yet is writable
    when it can be created).

    Raises:
        ConfigError: the home is a file, cannot be created or cannot be read.
    """
    home = settings.home.expanduser()
    try:
        return _access(home)
    except OSError as exc:  # e.g. a folder on the way this user may not enter
        raise ConfigError(
            f"cannot reach the data home {home}: {exc.strerror or exc}; {FIX} / 无法访问数据目录"
        ) from exc


def _access(home: Path) -> Access:
    if home.exists() and not home.is_dir():
        raise ConfigError(
            f"the data home {home} is a file, not a folder: {FIX} / 数据目录是一个文件，请换一个文件夹"
        )
    if home.is_dir():
        if is_writable(home):
            return "writable"
        if not os.access(home, os.R_OK | os.X_OK):
            raise ConfigError(
                f"cannot read the data home {home} (no permission): {FIX} / 没有权限读取数据目录"
            )
        return "read-only"
    parent = next(p for p in home.parents if p.exists())
    if not parent.is_dir() or not is_writable(parent):
        why = "is a file" if not parent.is_dir() else "is not writable"
        raise ConfigError(
            f"cannot create the data home {home}: {parent} {why}; {FIX} / 无法创建数据目录 {home}"
        )
    return "writable"


def read_only_error(settings: Settings) -> ConfigError:
    """What a command that writes says on a read-only home."""
    return ConfigError(
        f"the data home {settings.home.expanduser()} is read-only (no write permission) and this command "
        f"writes to it: fix its permissions or {FIX}; reading works (tianma memory list, review, doctor) "
        "/ 数据目录只读：此命令需要写入，请修改权限或换一个可写的目录（只读命令仍可使用）"
    )


def require_writable(settings: Settings) -> None:
    """Refuse a command that writes unless the home can be written.

    Raises:
        ConfigError: the home is read-only, a file, or cannot be created.
    """
    if home_access(settings) == "read-only":
        raise read_only_error(settings)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened read-only. A WAL database needs its ``-shm`` file, which a read-only folder
    cannot hold once the last writer has gone (https://sqlite.org/wal.html#readonly): then it is
    read as ``immutable``, which is what it is to this process."""
    uri = path.as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
    return conn


def open_read_only_store(settings: Settings) -> SqlMemoryStore:
    """The SQL store of a read-only home, opened without writing anything (no schema migration,
    no WAL switch); a store elsewhere (``sql.url``) is opened as usual.

    Raises:
        ConfigError: the home holds no store yet, or one of another schema version.
        BackendUnavailableError: the store cannot be read.
    """
    if settings.sql.url:
        return SqlMemoryStore.from_url(settings.sql.url)
    path = settings.home.expanduser() / "tianma.db"
    if not path.is_file():
        raise ConfigError(
            f"the data home {settings.home.expanduser()} is read-only and holds no memory store yet "
            f"(tianma.db): nothing to read / 数据目录只读，且还没有记忆库"
        )
    engine = create_engine("sqlite://", creator=lambda: _connect_read_only(path), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            found = conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar()
    except SQLAlchemyError as exc:
        engine.dispose()
        raise BackendUnavailableError(f"cannot read the memory store {path}: {exc}") from exc
    if found is None or int(found) != t.SCHEMA_VERSION:
        engine.dispose()
        raise ConfigError(
            f"the memory store {path} has schema version {found}, this tianma needs {t.SCHEMA_VERSION}, "
            "and its home is read-only: run tianma once with write access to it / 记忆库需要升级，但数据目录只读"
        )
    return SqlMemoryStore(engine)


class ReadOnlyHome:
    """A read-only home as an operation sees it (:class:`tianma.operations.operation.Home`): the
    SQL store opened read-only on first use; :meth:`runtime` refuses, in one line."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._store: SqlMemoryStore | None = None

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def store(self) -> SqlMemoryStore:
        if self._store is None:
            self._store = open_read_only_store(self._settings)
        return self._store

    def runtime(self) -> Runtime:
        raise read_only_error(self._settings)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> ReadOnlyHome:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
