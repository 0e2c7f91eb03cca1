"""Keyword channel of hybrid search: SQLite FTS5 (BM25) over pre-tokenised text.

The text is tokenised with :func:`tianma.text.tokenize.tokenize` (jieba for Chinese) and
stored space-joined, so FTS5's own tokenizer only has to split on spaces and stem English.
Each user's rows carry an owner token, so one MATCH both filters by user and ranks. A row's
rowid is derived from its record id, so replacing or deleting one is a rowid lookup instead
of a scan of the whole table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from sqlalchemy import Engine, text

from tianma.errors import ConfigError
from tianma.storage.protocols import KeywordIndex
from tianma.storage.transactions import Transactions
from tianma.text.tokenize import tokenize

_TABLE = "kw_index"


def owner_token(user_id: str) -> str:
    """A token that stands for the user inside the FTS index."""
    return "owner" + hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:20]


def row_id(record_id: str) -> int:
    """A stable positive 63-bit rowid for a record id."""
    digest = hashlib.blake2b(record_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def open_keyword_index(engine: Engine, tx: Transactions | None = None) -> KeywordIndex:
    """The keyword index for the store's database: FTS5 in a SQLite file, a ``tsvector`` table on
    PostgreSQL (:mod:`tianma.storage.keyword_postgres`); another database is a :class:`ConfigError`."""
    if engine.dialect.name == "postgresql":
        from tianma.storage.keyword_postgres import PostgresKeywordIndex

        return PostgresKeywordIndex(engine, tx)
    return SqliteKeywordIndex(engine, tx)


class SqliteKeywordIndex:
    """BM25 keyword search in an FTS5 table inside the SQL store's SQLite file."""

    def __init__(self, engine: Engine, tx: Transactions | None = None) -> None:
        """``tx``: the store's transactions, so that index rows are written in a unit's one
        transaction with the records they index (:mod:`tianma.storage.transactions`)."""
        if engine.dialect.name != "sqlite":
            raise ConfigError(
                f"sql.url: keyword search is built for SQLite and PostgreSQL, not {engine.dialect.name}"
            )
        self._engine = engine
        self._tx = tx or Transactions(engine)
        with engine.begin() as conn:
            conn.execute(
                text(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {_TABLE} USING fts5("
                    "record_id UNINDEXED, owner, body, tokenize='porter unicode61')"
                )
            )

    def upsert(self, user_id: str, items: Iterable[tuple[str, str]]) -> None:
        """Index ``(record_id, text)`` pairs of one user, replacing earlier entries."""
        owner = owner_token(user_id)
        rows = [
            {"rowid": row_id(rid), "rid": rid, "owner": owner, "body": " ".join(tokenize(body))}
            for rid, body in items
        ]
        if not rows:
            return
        with self._tx.begin() as conn:
            conn.execute(text(f"DELETE FROM {_TABLE} WHERE rowid = :rowid"), rows)
            conn.execute(
                text(
                    f"INSERT INTO {_TABLE}(rowid, record_id, owner, body) VALUES (:rowid, :rid, :owner, :body)"
                ),
                rows,
            )

    def delete(self, record_ids: Sequence[str]) -> None:
        """Remove records from the index."""
        if not record_ids:
            return
        with self._tx.begin() as conn:
            conn.execute(
                text(f"DELETE FROM {_TABLE} WHERE rowid = :rowid"),
                [{"rowid": row_id(rid)} for rid in record_ids],
            )

    def drop_user(self, user_id: str) -> None:
        """Remove every entry of one user."""
        with self._tx.begin() as conn:
            conn.execute(
                text(
                    f"DELETE FROM {_TABLE} WHERE rowid IN (SELECT rowid FROM {_TABLE} WHERE owner MATCH :owner)"
                ),
                {"owner": _quote(owner_token(user_id))},
            )

    def optimize(self) -> None:
        """Merge the index into one segment: FTS5 keeps a deleted row's tokens in older segments
        until they are merged (after a forget, so that its words are gone from the file)."""
        with self._tx.begin() as conn:
            conn.execute(text(f"INSERT INTO {_TABLE}({_TABLE}) VALUES ('optimize')"))

    def clear(self) -> None:
        """Remove everything (before a rebuild)."""
        with self._tx.begin() as conn:
            conn.execute(text(f"DELETE FROM {_TABLE}"))

    def ids(self, user_id: str) -> set[str]:
        """The record ids of one user's entries."""
        with self._tx.connect() as conn:
            rows = conn.execute(
                text(f"SELECT record_id FROM {_TABLE} WHERE owner MATCH :owner"), {"owner": _quote(owner_token(user_id))}
            )
            return {str(r[0]) for r in rows}

    def count(self, user_id: str) -> int:
        """Entries of one user."""
        with self._tx.connect() as conn:
            return int(
                conn.execute(
                    text(f"SELECT count(*) FROM {_TABLE} WHERE owner MATCH :owner"),
                    {"owner": _quote(owner_token(user_id))},
                ).scalar_one()
            )

    def search(
        self, user_id: str, query_tokens: Sequence[str], limit: int, *, others: bool = False
    ) -> list[tuple[str, float]]:
        """``(record_id, bm25)`` of the user's best keyword matches, best first (bm25 > 0).

        ``others=True`` searches every user *except* ``user_id`` (the cross-user leak check).
        """
        terms = sorted(set(query_tokens))
        if not terms:
            return []
        body = f"body : ({' OR '.join(map(_quote, terms))})"
        owner = f"owner : {_quote(owner_token(user_id))}"
        match = f"{body} NOT {owner}" if others else f"{owner} AND {body}"
        with self._tx.connect() as conn:
            rows = conn.execute(
                text(
                    f"SELECT record_id, bm25({_TABLE}, 0.0, 0.0, 1.0) AS score FROM {_TABLE} "
                    f"WHERE {_TABLE} MATCH :match ORDER BY score LIMIT :limit"
                ),
                {"match": match, "limit": limit},
            ).all()
        return [(str(rid), -float(score)) for rid, score in rows]
