"""One transaction for a unit of work, and the vector outbox that follows it."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select

from tianma.storage import outbox
from tianma.storage import schema as t
from tianma.storage.memory_index import InMemoryVectorIndex
from tianma.storage.records import Provenance
from tianma.storage.sql_store import SqlMemoryStore

DIM = 4


def vec(*values: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(values)] = values
    return (v / np.linalg.norm(v))[None, :]


def records(store: SqlMemoryStore) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(t.records)).scalar_one())


def test_a_unit_commits_everything_or_nothing(store: SqlMemoryStore) -> None:
    ran: list[str] = []
    with pytest.raises(RuntimeError), store.tx.unit():
        store.add_record("u", "fact", "one", Provenance(source="test"))
        store.tx.after_commit(lambda: ran.append("after"))
        store.add_record("u", "fact", "two", Provenance(source="test"))
        raise RuntimeError("crash half-way")
    assert records(store) == 0 and ran == []  # rolled back: nothing written, nothing run after
    with store.tx.unit():
        store.add_record("u", "fact", "one", Provenance(source="test"))
        with store.tx.unit():  # a unit inside a unit joins it
            store.add_record("u", "fact", "two", Provenance(source="test"))
        store.tx.after_commit(lambda: ran.append("after"))
        assert ran == []
    assert records(store) == 2 and ran == ["after"]


def test_a_unit_reads_its_own_writes(store: SqlMemoryStore) -> None:
    with store.tx.unit():
        rec = store.add_record("u", "fact", "seen inside", Provenance(source="test"))
        assert store.get_many("u", [rec.id])[rec.id].content == "seen inside"


def test_drain_applies_in_order_once_and_again_harmlessly(store: SqlMemoryStore) -> None:
    index = InMemoryVectorIndex(DIM)
    a, b = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
    with store.tx.begin() as conn:
        outbox.enqueue_upserts(conn, "u", [a, b], np.vstack([vec(1), vec(0, 1)]))
        outbox.enqueue_deletes(conn, "u", [b])
        outbox.enqueue_upserts(conn, "u", [a], vec(0, 0, 1))
        outbox.enqueue_upserts(conn, "v", [b], vec(1))
        outbox.enqueue_drop(conn, "v")
    assert outbox.pending(store.tx) == 6
    assert outbox.drain(store.tx, index) == 6
    assert outbox.pending(store.tx) == 0
    assert index.ids("u") == {a} and index.ids("v") == set()
    np.testing.assert_allclose(index.get_vectors("u", [a])[a], vec(0, 0, 1)[0], atol=1e-6)
    with store.tx.begin() as conn:  # a crash after applying, before deleting: applied again
        outbox.enqueue_upserts(conn, "u", [a], vec(0, 0, 1))
    assert outbox.drain(store.tx, index) == 1 and index.ids("u") == {a}
    index.close()
