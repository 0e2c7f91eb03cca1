"""Contracts of the memory backends."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine

from tianma.errors import BackendUnavailableError, ConfigError
from tianma.storage.erase import Deleted
from tianma.storage.records import Kind, MemoryRecord, NewEvent, Provenance, Status
from tianma.storage.transactions import Transactions

Vector = npt.NDArray[np.float32]
"""A 1-D float32 embedding, L2-normalised."""
Matrix = npt.NDArray[np.float32]
"""Row-stacked embeddings, each L2-normalised."""


def index_in_use(path: object, detail: str = "") -> BackendUnavailableError:
    """The error for a vector index folder another process holds (one process per folder)."""
    return BackendUnavailableError(
        f"vector index {path} is in use by another tianma process: stop it first (a running "
        "`tianma serve` that answers is used by the CLI instead) / 向量索引正被另一个 tianma 进程"
        f"占用，请先停止它{f' ({detail})' if detail else ''}"
    )


def check_dimension(dim: int, vectors: Matrix) -> None:
    """Refuse vectors of another length than the index holds (the embedder changed).

    Raises:
        ConfigError: with what to do.
    """
    if vectors.ndim != 2 or vectors.shape[1] != dim:
        got = vectors.shape[-1] if vectors.ndim else 0
        raise ConfigError(
            f"the vector index holds {dim}-d vectors, the embedder makes {got}-d ones; run "
            "`tianma index rebuild` / 向量维度与索引不符，请运行 `tianma index rebuild`"
        )


@runtime_checkable
class Embedder(Protocol):
    """Turns text into normalised vectors; queries and passages may be encoded differently."""

    @property
    def name(self) -> str:
        """The model's name (for spans)."""
        ...

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    def embed_query(self, text: str) -> Vector:
        """The vector of a search query."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        """The vectors of stored texts, one row each."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Dense vectors of one user's indexed records; derived data, rebuilt from SQL."""

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Matrix) -> None:
        """Add or replace vectors."""
        ...

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Remove vectors."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Remove every vector of a user."""
        ...

    def drop_all(self) -> None:
        """Remove every vector of every user (before a rebuild)."""
        ...

    def compact(self) -> None:
        """Make deleted vectors physically gone from storage (a no-op where nothing lingers)."""
        ...

    def search(self, user_id: str, vector: Vector, limit: int) -> list[tuple[str, float]]:
        """``(id, similarity)`` of the nearest vectors, best first."""
        ...

    def get_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by id (missing ids are absent)."""
        ...

    def count(self, user_id: str) -> int:
        """Vectors stored for a user."""
        ...

    def ids(self, user_id: str) -> set[str]:
        """The ids of every vector stored for a user (``tianma doctor`` compares them with SQL)."""
        ...

    def close(self) -> None:
        """Release the client."""
        ...


@runtime_checkable
class KeywordIndex(Protocol):
    """BM25 keyword search over records' tokenised text; derived data, rebuilt from SQL.

    Record ids are global: a record belongs to the user it was last upserted for.
    """

    def upsert(self, user_id: str, items: Iterable[tuple[str, str]]) -> None:
        """Index ``(record_id, text)`` pairs of a user, replacing earlier entries of those ids."""
        ...

    def delete(self, record_ids: Sequence[str]) -> None:
        """Remove entries by record id, whoever owns them; unknown ids are a no-op."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Remove every entry of this user and no other's."""
        ...

    def optimize(self) -> None:
        """Compact storage so deleted text is physically gone (a no-op where nothing lingers)."""
        ...

    def clear(self) -> None:
        """Remove every entry of every user (before a rebuild)."""
        ...

    def ids(self, user_id: str) -> set[str]:
        """The record ids of a user's entries (``tianma doctor`` compares them with SQL)."""
        ...

    def count(self, user_id: str) -> int:
        """How many entries a user has."""
        ...

    def search(
        self, user_id: str, query_tokens: Sequence[str], limit: int, *, others: bool = False
    ) -> list[tuple[str, float]]:
        """``(record_id, score > 0)`` sharing a query token, best first; ``others``: all other users'."""
        ...


@runtime_checkable
class RecordReader(Protocol):
    """Looks records up by id, owner, kind and status."""

    def get(self, record_id: str) -> MemoryRecord:
        """One record by id; raises ``RecordNotFoundError`` when there is none."""
        ...

    def get_many(self, user_id: str, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The user's records among ``record_ids`` by id (others' ids are skipped)."""
        ...

    def list_records(
        self,
        user_id: str | None,
        kind: Kind | Sequence[Kind] | None = None,
        status: Status | None = None,
        *,
        limit: int | None = None,
        most_confident_first: bool = False,
    ) -> list[MemoryRecord]:
        """Records of a user (``None`` = every user), oldest first or most confident first."""
        ...

    def facts_with_keys(self, user_id: str) -> list[MemoryRecord]:
        """Active records of a user that have a key."""
        ...

    def users(self) -> list[str]:
        """Every user with at least one record."""
        ...

    def has_other_users(self, user_id: str) -> bool:
        """Whether anyone but ``user_id`` has a record (cheap at any size)."""
        ...

    def count(self, user_id: str | None = None, *, status: Status | None = None) -> int:
        """Records of a user (or of everyone), optionally of one status."""
        ...


@runtime_checkable
class RecordWriter(Protocol):
    """Adds, counts hits on, closes and really deletes records; remembers what turns injected."""

    def add_record(
        self, user_id: str, kind: Kind, content: str, provenance: Provenance, *, at: datetime | None = None,
        **fields: Any,
    ) -> MemoryRecord:  # fmt: skip
        """A new record that is not an event; refused without provenance."""
        ...

    def record_hits(self, record_ids: Sequence[str], at: datetime) -> None:
        """Count one retrieval hit for each record."""
        ...

    def end_validity(
        self, user_id: str, record_ids: Sequence[str], at: datetime, by: str, how: Mapping[str, str]
    ) -> list[str]:
        """End the records' validity at ``at``, replaced by ``by``; the ids closed now."""
        ...

    def put_data(self, user_id: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Set these top-level entries of the records' data (record id → entries); another
        user's record or an unknown id is left alone."""
        ...

    def delete(
        self, user_id: str, record_ids: Sequence[str] | None = None, *, dialogue_id: str | None = None
    ) -> Deleted:
        """Really delete a user's records (all, these, or one dialogue's) and every copy of their
        text; the ids deleted and their texts."""
        ...

    def add_injections(self, event_id: str, user_id: str, rows: Iterable[dict[str, Any]]) -> None:
        """Remember what the turn ``event_id`` injected (``record_id, role, rank, score``)."""
        ...

    def injections_of(self, event_id: str) -> list[dict[str, Any]]:
        """What one turn injected, in rank order."""
        ...


@runtime_checkable
class DialogueLog(Protocol):
    """Events (messages) grouped in dialogues, and the statements they make."""

    def add_events(self, events: Sequence[NewEvent]) -> tuple[list[MemoryRecord], set[str]]:
        """Record events in one transaction, once per ``external_id``; all stored and the ids added now."""
        ...

    def next_events(self, user_id: str, events: Sequence[MemoryRecord]) -> dict[str, MemoryRecord]:
        """For each event, the next message of its dialogue, keyed by the event's id."""
        ...

    def signals_of_dialogue(self, user_id: str, dialogue_id: str | None) -> list[MemoryRecord]:
        """The signals recorded in one dialogue of a user, oldest first."""
        ...

    def current_statements(self, user_id: str, at: datetime, limit: int = 200) -> list[MemoryRecord]:
        """The user's statement events that still hold at ``at``, newest first."""
        ...

    def get_dialogue_user(self, dialogue_id: str) -> str:
        """The user a dialogue belongs to; raises ``RecordNotFoundError`` when there is none."""
        ...

    def end_dialogue(self, dialogue_id: str, at: datetime) -> bool:
        """Mark a dialogue finished; ``False`` when it already was."""
        ...


@runtime_checkable
class MemoryStore(RecordReader, RecordWriter, DialogueLog, Protocol):
    """The source of truth for every record, on a SQL database.

    Code outside the store still runs queries of its own (reviews, reflection runs, reports)
    on ``engine``, inside the store's transactions ``tx``: the store is SQL, whatever the engine.
    """

    engine: Engine
    """The database the records live in."""
    tx: Transactions
    """Every method's transaction; inside ``tx.unit()`` they share one."""

    def compact(self) -> None:
        """After a forget, fold away what still holds deleted rows' bytes (SQLite's write-ahead
        log); a no-op where the store has nothing of the kind to fold."""
        ...

    def close(self) -> None:
        """Release the database connections."""
        ...
