"""Schema migrations that tests/contract/test_sql_store.py does not cover."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select, update

from tianma.storage import schema as t
from tianma.storage.sql_store import create_sql_engine


def test_a_version_6_file_gets_the_index_that_counts_messages_since_a_time(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v6.db'}"
    engine = create_sql_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP INDEX ix_records_user_time")
        conn.execute(update(t.meta).values(value="6"))
    engine.dispose()
    migrated = create_sql_engine(url)
    with migrated.connect() as conn:
        version = conn.execute(select(t.meta.c.value).where(t.meta.c.key == "schema_version")).scalar_one()
        plan = conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM records"
            " WHERE user_id = 'u' AND kind = 'event' AND role = 'user' AND at > '2026-01-01'"
        ).all()
    migrated.dispose()
    assert int(version) == t.SCHEMA_VERSION == 7
    assert "ix_records_user_time" in " ".join(str(row[-1]) for row in plan)
