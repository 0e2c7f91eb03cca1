"""What every turn reads from SQL must be an index range of the few rows it needs, whatever the
store holds: the keyed learnt records (not every fact, not the keyed statement events) and whether any
other user exists (not a walk over this user's rows)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.unit.memory.test_reflection_due import plans
from tianma.storage.records import NewEvent, Provenance
from tianma.storage.sql_store import SqlMemoryStore

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlMemoryStore]:
    s = SqlMemoryStore.from_url(f"sqlite:///{tmp_path / 'm.db'}")
    said, _ = s.add_events([NewEvent("u", "user", f"以后先给结论 {i}", T0, "d", key="statement.preference")
                            for i in range(50)])  # fmt: skip
    for i in range(200):
        s.add_record("u", "fact", f"事实 {i}", Provenance(event_ids=(said[0].id,), source="test"), at=T0)
    for kind, key in (("fact", "pet.cat.name"), ("fact", "profile.city"), ("preference", "x"), ("signal", "y")):
        s.add_record("u", kind, key, Provenance(event_ids=(said[0].id,), source="test"), key=key, at=T0)
    yield s
    s.close()


def test_keyed_facts_are_read_by_the_key_index(store: SqlMemoryStore) -> None:
    found: list[object] = []
    reads = plans(store, lambda: found.extend(store.facts_with_keys("u")))
    assert sorted(r.key for r in found) == ["pet.cat.name", "profile.city", "x"]  # type: ignore[attr-defined]
    assert reads and all("ix_records_key" in plan and "key>" in plan.replace(" ", "") for plan in reads)


def test_other_users_are_probed_not_scanned(store: SqlMemoryStore) -> None:
    reads = plans(store, lambda: store.has_other_users("u"))
    assert len(reads) == 2 and all("USING COVERING INDEX" in p and "user_id" in p for p in reads)
