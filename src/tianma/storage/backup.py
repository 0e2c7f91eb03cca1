"""Consistent copies of a data home's SQLite files, taken while other processes write to them.

A live SQLite file in WAL mode is not backed up by copying it: the last transactions live in the
``-wal`` file, and a copy taken mid-write can be torn. SQLite's online backup API reads a
consistent snapshot through an ordinary read transaction, so it works beside a running ``tianma
serve``. The vector index is not copied (its shard is held by the server's process): it is
rebuilt from the store on restore.

A backup is a folder: the copies and a ``manifest.json`` (format version, tianma version, the
store's schema version, when, and the sha256 of each file), checked before anything is restored.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import URL, make_url

from tianma.errors import ConfigError

FORMAT = "tianma-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FOLDERS = ("chat_history",)
"""Plain folders of the home copied as they are (each user's line history of ``tianma chat``)."""
FILES = ("tianma.toml",)
"""Plain files of the home copied as they are (its settings, which may hold API keys: mode 0600)."""


def sqlite_file(url: str | URL) -> Path | None:
    """The file of a SQLite database URL; None for another database or an in-memory one."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def sqlite_snapshot(source: Path, target: Path) -> None:
    """Copy the SQLite file ``source`` to ``target`` through SQLite's online backup API (one read
    transaction: a consistent state even while another process writes). Written to a
    ``.partial`` file first, so a copy cut short is never taken for a complete one."""
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(partial)) as dst:
        src.backup(dst)
    os.chmod(partial, 0o600)
    partial.replace(target)


@dataclass(frozen=True, slots=True)
class Backup:
    """What a backup folder holds."""

    folder: Path
    files: dict[str, str]
    """Relative path → sha256."""
    tianma: str
    schema: int | None
    created: datetime


def take(databases: Iterable[Path], home: Path, out: Path, tianma: str, schema: int | None) -> Backup:
    """Back up the SQLite ``databases`` of ``home`` (those that exist), its settings file and its
    plain folders into the new folder ``out``.

    Raises:
        ConfigError: ``out`` exists and is not an empty folder.
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} already exists and is not empty: choose a new folder / 目标目录已存在且非空")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    files: dict[str, str] = {}
    for db in databases:
        if db.is_file():
            sqlite_snapshot(db, out / db.name)
            files[db.name] = sha256_of(out / db.name)
    for name in FILES:
        if (home / name).is_file():
            shutil.copyfile(home / name, out / name)
            os.chmod(out / name, 0o600)
            files[name] = sha256_of(out / name)
    for name in FOLDERS:
        folder = home / name
        if folder.is_dir():
            shutil.copytree(folder, out / name)
            for path in sorted(p for p in (out / name).rglob("*") if p.is_file()):
                files[path.relative_to(out).as_posix()] = sha256_of(path)
    created = datetime.now(UTC)
    manifest = {"format": FORMAT, "version": FORMAT_VERSION, "tianma": tianma, "schema": schema,
                "created": created.isoformat(), "files": files}  # fmt: skip
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    return Backup(out, files, tianma, schema, created)


def read(folder: Path) -> Backup:
    """The manifest of a backup folder, every file checked against it.

    Raises:
        ConfigError: not a backup folder, a newer format, or a file missing or changed.
    """
    path = folder / MANIFEST
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{folder} is not a tianma backup (no readable {MANIFEST}) / 不是 tianma 备份目录") from exc
    if manifest.get("format") != FORMAT or not isinstance(manifest.get("files"), dict):
        raise ConfigError(f"{path} is not a tianma backup manifest / 不是 tianma 备份清单")
    if int(manifest.get("version", 0)) > FORMAT_VERSION:
        raise ConfigError(f"{folder} was written by a newer tianma (backup format {manifest['version']}): upgrade tianma")
    files = {str(k): str(v) for k, v in manifest["files"].items()}
    for name, digest in files.items():
        copy = folder / name
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ConfigError(f"{path} names a file outside the backup ({name}) / 清单中的路径越界")
        if not copy.is_file() or sha256_of(copy) != digest:
            raise ConfigError(f"{copy} is missing or changed since the backup was taken / 备份文件缺失或已被改动")
    created = datetime.fromisoformat(str(manifest["created"]))
    schema = manifest.get("schema")
    return Backup(folder, files, str(manifest.get("tianma", "?")), None if schema is None else int(schema), created)


def put_back(backup: Backup, home: Path) -> None:
    """Copy a checked backup's files into ``home`` (each through a ``.partial`` file)."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in backup.files:
        target = home / name
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = target.with_name(target.name + ".partial")
        shutil.copyfile(backup.folder / name, partial)
        os.chmod(partial, 0o600)
        partial.replace(target)


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
