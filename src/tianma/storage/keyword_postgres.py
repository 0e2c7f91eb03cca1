"""Keyword channel on PostgreSQL: BM25 over :func:`tianma.text.tokenize.tokenize` tokens kept
in a ``tsvector`` with a GIN index, in the store's own database.

The tokens are tianma's (jieba for Chinese, lower-cased), written as a ``tsvector`` literal with
their positions — no text-search configuration re-parses them, so a document and a query always
agree on what a token is. PostgreSQL's ``ts_rank`` has no inverse document frequency, so the
score is BM25 computed in the query (the document frequencies counted on the matching rows
themselves, which hold every occurrence of a query token), as
:class:`~tianma.storage.keyword_memory.InMemoryKeywordIndex` computes it: ``Σ idf(t) · f·(K1+1) / (f + K1·(1 − B + B·len/avglen))`` with ``idf = ln((N − n + ½)
/ (n + ½))`` floored at 1e-6 as in FTS5.

Differences from :class:`~tianma.storage.keyword_index.SqliteKeywordIndex`: ``N``, ``n`` and the
average length are counted over the searched user's entries (``others=True``: everyone else's),
not over the whole table — one shared table of thousands of users would make every user's
ranking depend on everyone's words, and counting a common token over all of them costs a scan of
all its rows; no stemming (``running`` does not match ``runs``); a token's count stops at 256
and positions at 16,383 (``tsvector`` limits: long imported texts rank as if shorter).
:meth:`optimize` runs ``VACUUM``: dead rows' space is reused, but PostgreSQL does not overwrite
freed bytes the way SQLite's ``secure_delete`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Engine, text

from tianma.storage.keyword_memory import K1, B
from tianma.storage.transactions import Transactions
from tianma.text.tokenize import tokenize

_TABLE = "kw_index"
_MAX_POSITION = 16383
"""The largest position a ``tsvector`` keeps; later tokens share it."""
_LOCK = 0x7469616E6D61  # pg_advisory_xact_lock key ("tianma"): one process creates the table

_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (record_id text PRIMARY KEY, owner text NOT NULL, "
    "n_tokens integer NOT NULL, tsv tsvector NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {_TABLE}_tsv ON {_TABLE} USING gin (tsv)",
    f"CREATE INDEX IF NOT EXISTS {_TABLE}_owner ON {_TABLE} (owner, n_tokens)",
)

_SEARCH = """
WITH hits AS MATERIALIZED (
  SELECT k.record_id, k.tsv, k.n_tokens FROM {table} k WHERE {who} AND k.tsv @@ CAST(:any AS tsquery)
),
tf AS MATERIALIZED (
  SELECT h.record_id, h.n_tokens, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
  FROM hits h CROSS JOIN LATERAL unnest(h.tsv) AS u WHERE u.lexeme = ANY(CAST(:terms AS text[]))
),
df AS (SELECT lexeme, count(*) AS n FROM tf GROUP BY lexeme),
stats AS MATERIALIZED (SELECT count(*) AS n, coalesce(avg(k.n_tokens), 1) AS avglen FROM {table} k WHERE {who})
SELECT f.record_id,
       sum(greatest(ln((s.n - d.n + 0.5) / (d.n + 0.5)), 1e-6)
           * (f.tf * ({k1} + 1)) / (f.tf + {k1} * (1 - {b} + {b} * f.n_tokens / s.avglen))) AS score
FROM tf f JOIN df d ON d.lexeme = f.lexeme CROSS JOIN stats s
GROUP BY f.record_id
ORDER BY score DESC, f.record_id
LIMIT :limit
"""


def _lexeme(token: str) -> str:
    """``token`` quoted for a ``tsvector`` or ``tsquery`` literal."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(tokens: Sequence[str]) -> str:
    """The ``tsvector`` of ``tokens`` with their 1-based positions (``'tea':1,4 '咖啡':2``)."""
    positions: dict[str, list[int]] = {}
    for i, token in enumerate(tokens, start=1):
        positions.setdefault(token, []).append(min(i, _MAX_POSITION))
    return " ".join(f"{_lexeme(tok)}:{','.join(map(str, sorted(set(ps))))}" for tok, ps in positions.items())


class PostgresKeywordIndex:
    """BM25 keyword search in a ``tsvector`` table of the SQL store's PostgreSQL database."""

    def __init__(self, engine: Engine, tx: Transactions | None = None) -> None:
        """``tx``: the store's transactions, so that index rows are written in a unit's one
        transaction with the records they index (:mod:`tianma.storage.transactions`)."""
        self._engine = engine
        self._tx = tx or Transactions(engine)
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK})
            for statement in _SCHEMA:
                conn.execute(text(statement))

    def upsert(self, user_id: str, items: Iterable[tuple[str, str]]) -> None:
        """Index ``(record_id, text)`` pairs of one user, replacing earlier entries."""
        rows = {}
        for rid, body in items:
            tokens = tokenize(body)
            rows[rid] = {"rid": rid, "owner": user_id, "n": len(tokens), "tsv": tsvector_literal(tokens)}
        if not rows:
            return
        with self._tx.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO {_TABLE} (record_id, owner, n_tokens, tsv) "
                    "VALUES (:rid, :owner, :n, CAST(:tsv AS tsvector)) ON CONFLICT (record_id) DO UPDATE "
                    "SET owner = excluded.owner, n_tokens = excluded.n_tokens, tsv = excluded.tsv"
                ),
                list(rows.values()),
            )

    def delete(self, record_ids: Sequence[str]) -> None:
        """Remove records from the index."""
        if not record_ids:
            return
        with self._tx.begin() as conn:
            conn.execute(text(f"DELETE FROM {_TABLE} WHERE record_id = ANY(:ids)"), {"ids": list(record_ids)})

    def drop_user(self, user_id: str) -> None:
        """Remove every entry of one user."""
        with self._tx.begin() as conn:
            conn.execute(text(f"DELETE FROM {_TABLE} WHERE owner = :owner"), {"owner": user_id})

    def optimize(self) -> None:
        """``VACUUM`` the table (after a forget): dead rows' space is marked free for reuse."""
        with self._engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text(f"VACUUM {_TABLE}"))

    def clear(self) -> None:
        """Remove everything (before a rebuild)."""
        with self._tx.begin() as conn:
            conn.execute(text(f"DELETE FROM {_TABLE}"))

    def ids(self, user_id: str) -> set[str]:
        """The record ids of one user's entries."""
        with self._tx.connect() as conn:
            rows = conn.execute(text(f"SELECT record_id FROM {_TABLE} WHERE owner = :owner"), {"owner": user_id})
            return {str(r[0]) for r in rows}

    def count(self, user_id: str) -> int:
        """Entries of one user."""
        with self._tx.connect() as conn:
            query = text(f"SELECT count(*) FROM {_TABLE} WHERE owner = :owner")
            return int(conn.execute(query, {"owner": user_id}).scalar_one())

    def search(
        self, user_id: str, query_tokens: Sequence[str], limit: int, *, others: bool = False
    ) -> list[tuple[str, float]]:
        """``(record_id, bm25)`` of the user's best keyword matches, best first (bm25 > 0).

        ``others=True`` searches every user *except* ``user_id`` (the cross-user leak check).
        """
        terms = sorted({t.lower() for t in query_tokens if t.strip()})
        if not terms or limit <= 0:
            return []
        who = "k.owner <> :owner" if others else "k.owner = :owner"
        query = _SEARCH.format(table=_TABLE, who=who, k1=K1, b=B)
        params = {
            "owner": user_id,
            "terms": terms,
            "any": " | ".join(map(_lexeme, terms)),
            "limit": limit,
        }
        with self._tx.connect() as conn:
            rows = conn.execute(text(query), params).all()
        return [(str(rid), float(score)) for rid, score in rows]
