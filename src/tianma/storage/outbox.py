"""The vector outbox: vector-index writes recorded in the SQL transaction that made them due.

The vector index is another store (Qdrant), so it cannot join a SQL transaction. Instead the
transaction that indexes, unindexes or forgets records also writes what the vector index must
do — upsert (with the vector), delete, drop a user — as rows of ``vector_outbox``; after the
commit :func:`drain` applies them in order and deletes them, and at start-up it applies what a
crash left. Applying a row twice does no harm (an upsert or delete of the same id), so a crash
between applying and deleting costs nothing but the repeat.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection, Row

from tianma.storage import schema as t
from tianma.storage.protocols import Matrix, VectorIndex
from tianma.storage.transactions import Transactions

BATCH = 512
"""Outbox rows applied per round."""


def enqueue_upserts(conn: Connection, user_id: str, ids: Sequence[str], vectors: Matrix) -> None:
    """Record that ``ids`` get these vectors (rows of ``vectors``)."""
    rows = [
        {"user_id": user_id, "op": "upsert", "record_id": rid, "vector": np.asarray(vec, dtype=np.float32).tobytes()}
        for rid, vec in zip(ids, vectors, strict=True)
    ]
    if rows:
        conn.execute(t.vector_outbox.insert(), rows)


def enqueue_deletes(conn: Connection, user_id: str, ids: Sequence[str]) -> None:
    """Record that the vectors of ``ids`` go."""
    if ids:
        conn.execute(t.vector_outbox.insert(), [{"user_id": user_id, "op": "delete", "record_id": i} for i in ids])


def enqueue_drop(conn: Connection, user_id: str) -> None:
    """Record that every vector of ``user_id`` goes."""
    conn.execute(t.vector_outbox.insert().values(user_id=user_id, op="drop_user"))


def clear(conn: Connection) -> None:
    """Forget what is pending (before a rebuild writes everything again)."""
    conn.execute(delete(t.vector_outbox))


def pending(tx: Transactions) -> int:
    """Outbox rows not applied yet."""
    with tx.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(t.vector_outbox)).scalar_one())


def drain(tx: Transactions, vectors: VectorIndex) -> int:
    """Apply every pending row to ``vectors`` in order, deleting each batch once applied; returns
    how many rows were applied."""
    o = t.vector_outbox.c
    done = 0
    while True:
        with tx.connect() as conn:
            rows = conn.execute(
                select(o.id, o.user_id, o.op, o.record_id, o.vector).order_by(o.id).limit(BATCH)
            ).all()
        if not rows:
            return done
        for _, run in groupby(rows, key=lambda r: (r.user_id, r.op)):  # runs of one user and op, in order
            _apply(vectors, list(run))
        with tx.begin() as conn:
            conn.execute(delete(t.vector_outbox).where(o.id.in_([r.id for r in rows])))
        done += len(rows)


def _apply(vectors: VectorIndex, rows: Sequence[Row[Any, Any, Any, Any, Any]]) -> None:
    user_id, op = rows[0].user_id, rows[0].op
    ids = [r.record_id for r in rows]
    if op == "upsert":
        latest = {r.record_id: r.vector for r in rows}
        matrix = np.stack([np.frombuffer(v, dtype=np.float32) for v in latest.values()])
        vectors.upsert(user_id, list(latest), matrix)
    elif op == "delete":
        vectors.delete(user_id, list(dict.fromkeys(ids)))
    elif op == "drop_user":
        vectors.drop_user(user_id)
