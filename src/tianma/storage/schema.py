"""SQL schema of the source-of-truth store, versioned so older files can be migrated."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Engine,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    create_engine,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Connection, Dialect

from tianma.errors import ConfigError
from tianma.storage.backup import sqlite_file, sqlite_snapshot

log = logging.getLogger(__name__)

SCHEMA_VERSION = 10
"""Bump with a function in MIGRATIONS that upgrades a file of the previous version."""


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in Python, naive UTC in the database (SQLite keeps no zone)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the memory store; pass an aware one")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


metadata = MetaData()

meta = Table(
    "tianma_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

records = Table(
    "records",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("user_id", String(255), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("content", Text, nullable=False),
    # Keys are compared as byte ranges ("statement." <= key < "statement/"), so they sort by byte
    # as SQLite sorts them; a PostgreSQL database's collation may put "Statement.x" in that range.
    Column("key", String(255).with_variant(String(255, collation="C"), "postgresql")),
    Column("scope", String(255), nullable=False, default="global"),
    Column("tags", JSON, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("importance", Float, nullable=False),
    Column("hit_count", Integer, nullable=False, default=0),
    Column("last_hit_at", UtcDateTime),
    Column("status", String(16), nullable=False),
    Column("version", Integer, nullable=False, default=1),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("provenance", JSON, nullable=False),
    Column("data", JSON, nullable=False),
    # events only
    Column("dialogue_id", String(64)),
    Column("role", String(16)),
    Column("speaker", String(255)),
    Column("reply", Text),
    Column("at", UtcDateTime),
    Column("external_id", String(255)),
    Column("error", Text),
    # validity (Graphiti/Zep-style): what was said last about a subject holds; a time-scoped
    # statement closes itself when its period ends. NULL valid_until = still valid.
    Column("valid_from", UtcDateTime),
    Column("valid_until", UtcDateTime),
    Index("ix_records_user_kind_status", "user_id", "kind", "status"),
    Index("ix_records_dialogue", "user_id", "dialogue_id", "at"),
    Index("ix_records_external", "user_id", "external_id"),
    Index("ix_records_key", "user_id", "key"),
    Index("ix_records_user_time", "user_id", "kind", "role", "at"),  # messages since a reflection
)

record_versions = Table(
    "record_versions",
    metadata,
    Column("record_id", String(36), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("user_id", String(255), nullable=False),
    Column("content", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("status", String(16), nullable=False),
    Column("data", JSON, nullable=False),
    Column("changed_at", UtcDateTime, nullable=False),
    Column("reason", Text, nullable=False),
    Column("evidence", JSON, nullable=False),
    Column("run_id", String(36)),  # the reflection run that made this change, if any
)

replace_log = Table(
    "replace_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", String(255), nullable=False),
    Column("old_id", String(36), nullable=False),
    Column("new_id", String(36)),
    Column("reason", Text, nullable=False),
    Column("evidence", JSON, nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("run_id", String(36)),
    Index("ix_replace_user", "user_id"),
)

reflection_runs = Table(
    "reflection_runs",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("user_id", String(255), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("until", UtcDateTime, nullable=False),  # events up to here were reflected on
    Column("trigger", String(32), nullable=False),
    Column("status", String(16), nullable=False),  # published | dry_run | undone
    Column("report", JSON, nullable=False),
    Index("ix_runs_user", "user_id", "started_at"),
)

run_changes = Table(
    "run_changes",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("user_id", String(255), nullable=False),
    Column("record_id", String(36), nullable=False),
    Column("action", String(16), nullable=False),  # create | update
    Column("before", JSON),  # the whole records row before the change; None for create
)

dialogues = Table(
    "dialogues",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("user_id", String(255), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("ended_at", UtcDateTime),
    Column("turns", Integer, nullable=False, default=0),
    Index("ix_dialogues_user", "user_id", "started_at"),
)

injections = Table(
    "injections",
    metadata,
    Column("event_id", String(36), primary_key=True),
    Column("record_id", String(36), primary_key=True),
    Column("user_id", String(255), nullable=False),
    Column("role", String(16), nullable=False),  # memory | strategy | preference
    Column("rank", Integer, nullable=False),
    Column("score", Float, nullable=False),
    Column("explored", Integer, nullable=False, default=0),
    Index("ix_injections_record", "record_id"),
    Index("ix_injections_user", "user_id"),
)

reviews = Table(
    "reviews",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("user_id", String(255), nullable=False),
    Column("record_id", String(36)),  # the pending record; None when the candidate was rejected unwritten
    Column("run_id", String(36)),  # the reflection run that proposed it
    Column("kind", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("zone", String(16), nullable=False),  # forbidden | caution | free
    Column("mode", String(16), nullable=False),  # manual | confirm | rejected
    Column("reason", Text, nullable=False),  # why it waits (or was rejected)
    Column("status", String(16), nullable=False),  # pending | approved | rejected
    Column("preview", JSON, nullable=False),  # before / after
    Column("evidence", JSON, nullable=False),  # source event ids
    Column("created_at", UtcDateTime, nullable=False),
    Column("decided_at", UtcDateTime),
    Column("decision", Text),
    Column("decided_run", String(36)),  # the run that applied the decision (undoable)
    Index("ix_reviews_user_status", "user_id", "status"),
)

job_runs = Table(
    "job_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job", String(64), nullable=False),
    Column("slot", UtcDateTime, nullable=False),  # the period slot this run covers (now, if forced)
    Column("started_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime),
    Column("status", String(16), nullable=False),  # running | ok | failed
    Column("error", Text),
    Column("report", JSON),
    # claiming a slot is an INSERT: the constraint is what keeps two processes from both running it
    UniqueConstraint("job", "slot", name="uq_job_runs_job_slot"),
    Index("ix_job_runs_job_started", "job", "started_at"),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(32), nullable=False),  # reflection | …
    Column("key", String(300), nullable=False),  # one pending job per key: later asks join it
    Column("user_id", String(255)),  # one running job of a kind per user
    Column("payload", JSON, nullable=False),
    Column("status", String(16), nullable=False),  # pending | running | done | failed
    Column("attempts", Integer, nullable=False, default=0),
    Column("run_after", UtcDateTime, nullable=False),
    Column("lease_until", UtcDateTime),
    Column("worker", String(128)),
    Column("created_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime),
    Column("error", Text),
    Column("result", JSON),
    Index("uq_jobs_pending_key", "key", unique=True,
          sqlite_where=text("status = 'pending'"), postgresql_where=text("status = 'pending'")),
    Index("ix_jobs_status_run_after", "status", "run_after"),
    Index("ix_jobs_user_kind_status", "user_id", "kind", "status"),
)  # fmt: skip

experiments = Table(
    "experiments",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("unit", String(16), nullable=False),  # user | dialogue: what is assigned to an arm
    Column("arms", JSON, nullable=False),  # arm name -> the variant's items (slot:impl, section.name=value)
    Column("started_at", UtcDateTime, nullable=False),
    Column("stopped_at", UtcDateTime),
)
"""Online experiments (:mod:`tianma.experiments.online`): at most one running (no ``stopped_at``)."""

vector_outbox = Table(
    "vector_outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", String(255), nullable=False),
    Column("op", String(16), nullable=False),  # upsert | delete | drop_user
    Column("record_id", String(36)),
    Column("vector", LargeBinary),  # float32 bytes, for upsert
)

record_tags = Table(
    "record_tags",
    metadata,
    Column("user_id", String(255), nullable=False),
    Column("tag", String(64), nullable=False),
    Column("record_id", String(36), nullable=False),
    PrimaryKeyConstraint("user_id", "tag", "record_id"),
    Index("ix_record_tags_record", "record_id"),
)
"""The association graph's links (:mod:`tianma.storage.tag_index`): a record and a thing it is about.
Derived from the records (rebuilt by ``tianma index rebuild``)."""

Migration = Callable[[Connection], None]


def _add_run_columns(conn: Connection) -> None:
    """v2: reflection runs (their tables are created by ``create_all``) and run ids on history."""
    conn.exec_driver_sql("ALTER TABLE record_versions ADD COLUMN run_id VARCHAR(36)")
    conn.exec_driver_sql("ALTER TABLE replace_log ADD COLUMN run_id VARCHAR(36)")


def _add_reviews(conn: Connection) -> None:
    """v3: the review queue (its table is created by ``create_all``)."""


def _add_job_runs(conn: Connection) -> None:
    """v4: the periodic jobs' run log (its table is created by ``create_all``)."""


def _add_validity(conn: Connection) -> None:
    """v5: validity intervals on records; what existed is valid from when it was said or made."""
    conn.exec_driver_sql("ALTER TABLE records ADD COLUMN valid_from DATETIME")
    conn.exec_driver_sql("ALTER TABLE records ADD COLUMN valid_until DATETIME")
    conn.exec_driver_sql("UPDATE records SET valid_from = COALESCE(at, created_at)")


def _add_vector_outbox(conn: Connection) -> None:
    """v6: the vector outbox (its table is created by ``create_all``)."""


def _add_user_time_index(conn: Connection) -> None:
    """v7: an index to count a user's messages since a time without reading every event."""
    (index,) = (i for i in records.indexes if i.name == "ix_records_user_time")
    index.create(conn, checkfirst=True)


def _add_record_tags(conn: Connection) -> None:
    """v8: the association graph (its table is created by ``create_all``); the records already
    there are tagged when the runtime opens the store (:data:`TAGS_PENDING`)."""
    conn.execute(meta.insert().values(key=TAGS_PENDING, value="1"))


def _add_jobs(conn: Connection) -> None:
    """v9: the job queue workers claim from (its table is created by ``create_all``)."""


def _add_experiments(conn: Connection) -> None:
    """v10: online experiments (their table is created by ``create_all``)."""


TAGS_PENDING = "tags_pending"
"""``tianma_meta`` key: records written before the association graph still need their tags."""

MIGRATIONS: dict[int, Migration] = {
    2: _add_run_columns, 3: _add_reviews, 4: _add_job_runs, 5: _add_validity, 6: _add_vector_outbox,
    7: _add_user_time_index, 8: _add_record_tags, 9: _add_jobs, 10: _add_experiments,
}  # fmt: skip
"""``MIGRATIONS[n]`` upgrades a store of schema version ``n - 1`` to ``n``."""


def stored_version(engine: Engine) -> int | None:
    """The schema version the database says it has (None: an empty database)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(meta.name):
            return None
        return int(conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar_one())


def version_at(url: str) -> int | None:
    """:func:`stored_version` of the database at ``url``, read without migrating anything.

    Raises:
        SQLAlchemyError: the database cannot be read.
    """
    engine = create_engine(url)
    try:
        return stored_version(engine)
    finally:
        engine.dispose()


def backup_before_migration(engine: Engine, found: int) -> Path | None:
    """A copy of a SQLite file about to be migrated from schema ``found``, beside it
    (``tianma.db.schema-v7.bak``), made with SQLite's online backup API (consistent even while
    another process writes); None for other databases (PostgreSQL: back up with ``pg_dump``)
    and in-memory ones. An existing copy of the same version is kept, not overwritten."""
    source = sqlite_file(engine.url)
    if source is None:
        return None
    target = source.with_name(f"{source.name}.schema-v{found}.bak")
    if target.exists():
        return target
    sqlite_snapshot(source, target)
    log.info("backed up %s to %s before migrating it from schema %d to %d", source, target, found, SCHEMA_VERSION)
    return target


def ensure_schema(engine: Engine) -> int:
    """Create the schema in an empty database or migrate an older one (a SQLite file is backed
    up first: :func:`backup_before_migration`); return its version.

    Raises:
        ConfigError: the database was written by a newer tianma.
    """
    found = stored_version(engine)
    if found is not None and found < SCHEMA_VERSION:
        backup_before_migration(engine, found)
    with engine.begin() as conn:
        if not inspect(conn).has_table(meta.name):
            metadata.create_all(conn)
            conn.execute(meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
            return SCHEMA_VERSION
        found = int(conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar_one())
        if found > SCHEMA_VERSION:
            raise ConfigError(
                f"the memory store has schema version {found}, newer than this tianma "
                f"({SCHEMA_VERSION}); upgrade tianma"
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[version](conn)
        metadata.create_all(conn)  # tables added since, if any
        conn.execute(meta.update().where(meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))
        return SCHEMA_VERSION


def utcnow() -> datetime:
    """The current time, aware UTC."""
    return datetime.now(UTC)


def as_aware(value: datetime | None) -> datetime:
    """``value`` as aware UTC (naive values are taken as UTC); ``None`` means now."""
    if value is None:
        return utcnow()
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def plain(value: Any) -> Any:
    """``value`` with datetimes as ISO strings (and tuples as lists), ready for a JSON column."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def row_dict(row: Any) -> dict[str, Any]:
    """A SQLAlchemy row as a plain dict."""
    return dict(row._mapping)
