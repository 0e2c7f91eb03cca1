"""The source of truth: records, versions, replace log, dialogues and injections in SQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, and_, case, create_engine, event, func, make_url, null, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from tianma.errors import BackendUnavailableError, ConfigError, MemoryStoreError, RecordNotFoundError
from tianma.storage import schema as t
from tianma.storage.erase import Deleted, delete_records
from tianma.storage.records import Kind, MemoryRecord, NewEvent, Provenance, Status
from tianma.storage.transactions import Transactions

if TYPE_CHECKING:
    from tianma.storage.protocols import MemoryStore


POSTGRES_HINT = "for PostgreSQL: pip install 'tianma[postgres]', and a postgresql+psycopg:// URL"


KEYED_KINDS = ("fact", "preference", "experience")
"""Learnt kinds a key can name (what :meth:`SqlMemoryStore.facts_with_keys` reads)."""
STATEMENT_KEYS = ("statement.", "statement/")
"""The key range of statement events: ``statement.`` ≤ key < ``statement/`` (``/`` follows ``.``)."""


def new_id() -> str:
    """A fresh record id (a UUID, so it is also a valid Qdrant point id)."""
    return str(uuid.uuid4())


def injection_values(event_id: str, user_id: str, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the ``injections`` table for what the turn ``event_id`` injected."""
    return [{"event_id": event_id, "user_id": user_id, "explored": 0, **r} for r in rows]


@contextmanager
def map_sql_errors() -> Iterator[None]:
    """Re-raise SQLAlchemy failures as tianma errors."""
    try:
        yield
    except SQLAlchemyError as exc:
        raise MemoryStoreError(f"memory store: {exc.__class__.__name__}: {exc}") from exc


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA secure_delete=ON")  # a forget overwrites the bytes, not just unlinks them
    cur.close()


def create_sql_engine(url: str) -> Engine:
    """An engine for ``url`` with the schema ensured (SQLite in WAL mode).

    Raises:
        ConfigError: the URL names a driver that is not installed, or the database was written
            by a newer tianma.
        BackendUnavailableError: the database cannot be opened.
    """
    shown = _without_password(url)
    try:
        engine = create_engine(url)
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        try:
            t.ensure_schema(engine)
        except BaseException:
            engine.dispose()  # a refused store keeps no connection open
            raise
    except ImportError as exc:  # e.g. postgresql+psycopg:// without psycopg
        raise ConfigError(f"sql.url {shown}: driver {exc.name} is not installed ({POSTGRES_HINT})") from exc
    except SQLAlchemyError as exc:
        raise BackendUnavailableError(f"cannot open the memory store {shown}: {exc}") from exc
    return engine


def _without_password(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url  # not a URL at all: nothing to hide


def _to_record(row: Any) -> MemoryRecord:
    m = row._mapping
    return MemoryRecord(
        id=m["id"],
        user_id=m["user_id"],
        kind=m["kind"],
        content=m["content"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        provenance=Provenance.from_json(m["provenance"]),
        scope=m["scope"],
        key=m["key"],
        tags=tuple(m["tags"] or ()),
        confidence=m["confidence"],
        importance=m["importance"],
        hit_count=m["hit_count"],
        last_hit_at=m["last_hit_at"],
        status=m["status"],
        version=m["version"],
        data=dict(m["data"] or {}),
        dialogue_id=m["dialogue_id"],
        role=m["role"],
        speaker=m["speaker"],
        reply=m["reply"],
        at=m["at"],
        valid_from=m.get("valid_from"),
        valid_until=m.get("valid_until"),
    )


class SqlMemoryStore:
    """Records of every kind, with prior versions and a replace log; SQLAlchemy Core.

    A :class:`~tianma.storage.protocols.MemoryStore` on SQLite or on PostgreSQL (psycopg 3, the
    ``postgres`` extra); tests/contract runs its suite on both.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.tx = Transactions(engine)
        """Every method's transaction; inside ``tx.unit()`` they share one (:mod:`.transactions`)."""

    @classmethod
    def from_url(cls, url: str) -> SqlMemoryStore:
        """A store on ``url``: ``sqlite:///path``, ``sqlite://`` (in memory) or
        ``postgresql+psycopg://user:password@host/database``; raises as :func:`create_sql_engine`."""
        return cls(create_sql_engine(url))

    def close(self) -> None:
        self.engine.dispose()

    def compact(self) -> None:
        """Fold SQLite's write-ahead log into the file and empty it (after a forget: the log
        holds older copies of the pages); nothing on other databases."""
        if self.engine.dialect.name == "sqlite":
            with map_sql_errors(), self.tx.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- writes ---------------------------------------------------------------------------

    def add_events(self, events: Sequence[NewEvent]) -> tuple[list[MemoryRecord], set[str]]:
        """Record events in one transaction; an ``external_id`` already stored is not re-added.

        Returns the stored events in input order (existing ones for known external ids) and
        the ids of those added now.
        """
        out: list[MemoryRecord] = []
        added: set[str] = set()
        with map_sql_errors(), self.tx.begin() as conn:
            known = self._known_external(conn, events)
            rows = []
            for ev in events:
                if ev.external_id is not None and (ev.user_id, ev.external_id) in known:
                    out.append(known[(ev.user_id, ev.external_id)])
                    continue
                row = self._event_row(ev)
                rows.append(row)
                added.add(row["id"])
                out.append(_to_record(_Row(row)))
                if ev.external_id is not None:
                    known[(ev.user_id, ev.external_id)] = out[-1]
            if rows:
                conn.execute(t.records.insert(), rows)
            fresh = [ev for ev, rec in zip(events, out, strict=True) if rec.id in added]
            self._touch_dialogues(conn, fresh)
        return out, added

    def _known_external(
        self, conn: Connection, events: Sequence[NewEvent]
    ) -> dict[tuple[str, str], MemoryRecord]:
        wanted = {(e.user_id, e.external_id) for e in events if e.external_id is not None}
        found: dict[tuple[str, str], MemoryRecord] = {}
        for user_id in {u for u, _ in wanted}:
            ids = [x for u, x in wanted if u == user_id]
            for chunk in chunks(ids, 500):
                query = select(t.records).where(
                    t.records.c.user_id == user_id, t.records.c.external_id.in_(chunk)
                )
                for row in conn.execute(query):
                    found[(user_id, row.external_id)] = _to_record(row)
        return found

    @staticmethod
    def _event_row(ev: NewEvent) -> dict[str, Any]:
        at = t.as_aware(ev.at)
        return {
            "id": ev.id or new_id(),
            "user_id": ev.user_id,
            "kind": "event",
            "content": ev.text,
            "key": ev.key,
            "scope": f"dialogue:{ev.dialogue_id}",
            "tags": [],
            "confidence": 1.0,
            "importance": 0.5,
            "hit_count": 0,
            "last_hit_at": None,
            "status": "active",
            "version": 1,
            "created_at": at,
            "updated_at": at,
            "provenance": Provenance(dialogue_ids=(ev.dialogue_id,), source=ev.source).to_json(),
            "data": dict(ev.data),
            "dialogue_id": ev.dialogue_id,
            "role": ev.role,
            "speaker": ev.speaker,
            "reply": ev.reply,
            "at": at,
            "external_id": ev.external_id,
            "error": ev.error,
            "valid_from": at,
            "valid_until": None if ev.valid_until is None else t.as_aware(ev.valid_until),
        }

    def _touch_dialogues(self, conn: Connection, events: Sequence[NewEvent]) -> None:
        """Create or count each dialogue of ``events``; a dialogue ended before the newest of
        them is open again (a chat client came back to it: it ends again when idle)."""
        turns: dict[tuple[str, str], tuple[datetime, datetime, int]] = {}
        for ev in events:
            key, at = (ev.user_id, ev.dialogue_id), t.as_aware(ev.at)
            first, last, n = turns.get(key, (at, at, 0))
            turns[key] = (min(first, at), max(last, at), n + (ev.role == "user"))
        d = t.dialogues.c
        for (user_id, dialogue_id), (first, last, n) in turns.items():
            found = conn.execute(select(d.user_id).where(d.id == dialogue_id)).first()
            if found is None:
                conn.execute(
                    t.dialogues.insert().values(id=dialogue_id, user_id=user_id, started_at=first, turns=n)
                )
            elif found.user_id != user_id:
                raise MemoryStoreError(f"dialogue {dialogue_id} belongs to another user")
            else:
                reopened = case((d.ended_at < last, null()), else_=d.ended_at)
                conn.execute(
                    update(t.dialogues)
                    .where(d.id == dialogue_id)
                    .values(turns=d.turns + n, ended_at=reopened)
                )

    def add_record(
        self,
        user_id: str,
        kind: Kind,
        content: str,
        provenance: Provenance,
        *,
        at: datetime | None = None,
        **fields: Any,
    ) -> MemoryRecord:
        """Store a new memory record (fact, preference, experience, strategy or signal).

        Raises:
            MemoryStoreError: the record has no provenance, or is an event.
        """
        if kind == "event":
            raise MemoryStoreError("events are recorded with add_events")
        if not (provenance.event_ids or provenance.reflection_ids or provenance.source):
            raise MemoryStoreError("a record without provenance is a bug")
        now = t.as_aware(at)
        row: dict[str, Any] = {
            "id": new_id(),
            "user_id": user_id,
            "kind": kind,
            "content": content,
            "key": None,
            "scope": "global",
            "tags": [],
            "confidence": 0.5,
            "importance": 0.5,
            "hit_count": 0,
            "last_hit_at": None,
            "status": "active",
            "version": 1,
            "created_at": now,
            "updated_at": now,
            "provenance": provenance.to_json(),
            "data": {},
            "dialogue_id": None,
            "role": None,
            "speaker": None,
            "reply": None,
            "at": None,
            "external_id": None,
            "error": None,
            "valid_from": now,
            "valid_until": None,
        }
        unknown = set(fields) - set(row)
        if unknown:
            raise MemoryStoreError(f"unknown record fields: {sorted(unknown)}")
        row.update(fields)
        row["tags"] = list(row["tags"])
        with map_sql_errors(), self.tx.begin() as conn:
            conn.execute(t.records.insert().values(**row))
        return _to_record(_Row(row))

    def record_hits(self, record_ids: Sequence[str], at: datetime) -> None:
        """Count one retrieval hit for each record."""
        if not record_ids:
            return
        with map_sql_errors(), self.tx.begin() as conn:
            conn.execute(
                update(t.records)
                .where(t.records.c.id.in_(list(record_ids)))
                .values(hit_count=t.records.c.hit_count + 1, last_hit_at=t.as_aware(at))
            )

    def add_injections(self, event_id: str, user_id: str, rows: Iterable[dict[str, Any]]) -> None:
        """Remember what a turn injected (``record_id, role, rank, score, explored``)."""
        values = injection_values(event_id, user_id, rows)
        if values:
            with map_sql_errors(), self.tx.begin() as conn:
                conn.execute(t.injections.insert(), values)

    def get_dialogue_user(self, dialogue_id: str) -> str:
        """The user a dialogue belongs to.

        Raises:
            RecordNotFoundError: no such dialogue.
        """
        with map_sql_errors(), self.tx.connect() as conn:
            user = conn.execute(select(t.dialogues.c.user_id).where(t.dialogues.c.id == dialogue_id)).scalar()
        if user is None:
            raise RecordNotFoundError(f"no dialogue {dialogue_id}")
        return str(user)

    def end_dialogue(self, dialogue_id: str, at: datetime) -> bool:
        """Mark a dialogue finished; ``False`` (and nothing changed) when it already was.

        Raises:
            RecordNotFoundError: no such dialogue.
        """
        d = t.dialogues.c
        with map_sql_errors(), self.tx.begin() as conn:
            done = conn.execute(
                update(t.dialogues).where(d.id == dialogue_id, d.ended_at.is_(None)).values(ended_at=at)
            )
            if done.rowcount == 1:
                return True
            if conn.execute(select(d.id).where(d.id == dialogue_id)).first() is None:
                raise RecordNotFoundError(f"no dialogue {dialogue_id}")
        return False

    # -- reads ----------------------------------------------------------------------------

    def get(self, record_id: str) -> MemoryRecord:
        """One record by id.

        Raises:
            RecordNotFoundError: no such record.
        """
        with map_sql_errors(), self.tx.connect() as conn:
            row = conn.execute(select(t.records).where(t.records.c.id == record_id)).first()
        if row is None:
            raise RecordNotFoundError(f"no record {record_id}")
        return _to_record(row)

    def get_many(self, user_id: str, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The user's records among ``record_ids`` (others' ids are silently skipped)."""
        out: dict[str, MemoryRecord] = {}
        with map_sql_errors(), self.tx.connect() as conn:
            for chunk in chunks(list(record_ids), 500):
                # Look up by primary key and check the owner here: with ``user_id = ?`` in the
                # WHERE clause SQLite picks the (user, kind, status) index and scans every row
                # of the user (52 ms at 100k records vs 0.3 ms).
                query = select(t.records).where(t.records.c.id.in_(chunk))
                out.update((row.id, _to_record(row)) for row in conn.execute(query) if row.user_id == user_id)
        return out

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
        order: tuple[ColumnElement[Any], ...] = (t.records.c.created_at, t.records.c.id)
        if most_confident_first:
            order = (t.records.c.confidence.desc(), *order)
        query = select(t.records).order_by(*order)
        if user_id is not None:
            query = query.where(t.records.c.user_id == user_id)
        if isinstance(kind, str):
            query = query.where(t.records.c.kind == kind)
        elif kind is not None:
            query = query.where(t.records.c.kind.in_(list(kind)))
        if status is not None:
            query = query.where(t.records.c.status == status)
        if limit is not None:
            query = query.limit(limit)
        with map_sql_errors(), self.tx.connect() as conn:
            return [_to_record(row) for row in conn.execute(query)]

    def signals_of_dialogue(self, user_id: str, dialogue_id: str | None) -> list[MemoryRecord]:
        """The signals recorded in one dialogue of a user, oldest first."""
        r = t.records.c
        query = (
            select(t.records)
            .where(r.user_id == user_id, r.dialogue_id == dialogue_id, r.kind == "signal")
            .order_by(r.created_at)
        )
        with map_sql_errors(), self.tx.connect() as conn:
            return [_to_record(row) for row in conn.execute(query)]

    def next_events(self, user_id: str, events: Sequence[MemoryRecord]) -> dict[str, MemoryRecord]:
        """For each event, the next message of the same dialogue (by time), keyed by the event's id.

        One indexed lookup per event (``ix_records_dialogue``); events at the same instant are
        not ordered, so an event whose successor shares its timestamp has none here.
        """
        r = t.records.c
        out: dict[str, MemoryRecord] = {}
        with map_sql_errors(), self.tx.connect() as conn:
            for ev in events:
                if ev.kind != "event" or ev.dialogue_id is None or ev.at is None:
                    continue
                row = conn.execute(
                    select(t.records)
                    .where(
                        r.user_id == user_id, r.dialogue_id == ev.dialogue_id, r.at > ev.at, r.kind == "event"
                    )
                    .order_by(r.at)
                    .limit(1)
                ).first()
                if row is not None:
                    out[ev.id] = _to_record(row)
        return out

    def facts_with_keys(self, user_id: str) -> list[MemoryRecord]:
        """Active learnt records with a key (structured facts, keyed preferences and experiences)
        of a user — not the keyed statement events, which grow with every message that states
        something."""
        r = t.records.c
        found: list[MemoryRecord] = []
        with map_sql_errors(), self.tx.connect() as conn:
            # two ranges of the key index around the statement keys: read only keyed facts, not every
            # fact (``key IS NOT NULL`` lets SQLite, without statistics, pick the kind index)
            for keys in (and_(r.key > "", r.key < STATEMENT_KEYS[0]), r.key >= STATEMENT_KEYS[1]):
                query = select(t.records).where(r.user_id == user_id, keys, r.kind.in_(KEYED_KINDS), r.status == "active")
                found += [_to_record(row) for row in conn.execute(query)]
        return found

    def has_other_users(self, user_id: str) -> bool:
        """Whether anyone but ``user_id`` has a record: two index probes, whatever the store's size
        (``user_id != …`` would walk the index past every row of the one user)."""
        r = t.records.c
        with map_sql_errors(), self.tx.connect() as conn:
            return any(
                conn.execute(select(r.user_id).where(side).limit(1)).first() is not None
                for side in (r.user_id < user_id, r.user_id > user_id)
            )

    def users(self) -> list[str]:
        """Every user with at least one record."""
        with map_sql_errors(), self.tx.connect() as conn:
            return [r[0] for r in conn.execute(select(t.records.c.user_id).distinct())]

    def count(self, user_id: str | None = None, *, status: Status | None = None) -> int:
        """Records of a user (or of everyone), optionally of one status."""
        query = select(func.count()).select_from(t.records)
        if user_id is not None:
            query = query.where(t.records.c.user_id == user_id)
        if status is not None:
            query = query.where(t.records.c.status == status)
        with map_sql_errors(), self.tx.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def injections_of(self, event_id: str) -> list[dict[str, Any]]:
        """What one turn injected, in rank order."""
        query = (
            select(t.injections)
            .where(t.injections.c.event_id == event_id)
            .order_by(t.injections.c.role, t.injections.c.rank)
        )
        with map_sql_errors(), self.tx.connect() as conn:
            return [t.row_dict(r) for r in conn.execute(query)]

    def current_statements(self, user_id: str, at: datetime, limit: int = 200) -> list[MemoryRecord]:
        """The user's statement events that still hold at ``at`` (newest first)."""
        r = t.records.c
        query = (
            select(t.records)
            .where(
                r.user_id == user_id,
                r.key >= STATEMENT_KEYS[0],  # a range, not LIKE: SQLite's LIKE cannot use the (user, key) index
                r.key < STATEMENT_KEYS[1],
                r.status == "active",
                or_(r.valid_until.is_(None), r.valid_until > t.as_aware(at)),
                r.at <= t.as_aware(at),
            )
            .order_by(r.at.desc())
            .limit(limit)
        )
        with map_sql_errors(), self.tx.connect() as conn:
            return [_to_record(row) for row in conn.execute(query)]

    def end_validity(
        self, user_id: str, record_ids: Sequence[str], at: datetime, by: str, how: Mapping[str, str],
        run_id: str | None = None,
    ) -> list[str]:
        """End the validity of records at ``at`` because ``by`` (a newer statement) replaced them
        (``how[id]``: ``restated`` or ``revised``); records already closed earlier keep their end.
        ``run_id``: the reflection run on whose model's word they close (its undo reopens them).
        Returns the ids closed now."""
        closed: list[str] = []
        when = t.as_aware(at)
        with map_sql_errors(), self.tx.begin() as conn:
            rows = conn.execute(select(t.records).where(t.records.c.id.in_(list(record_ids)))).all()
            for row in rows:
                if row.user_id != user_id or (row.valid_until is not None and row.valid_until <= when):
                    continue
                data = {**(row.data or {}), "closed_by": by, "closed_as": how.get(row.id, "revised")}
                if run_id is not None:
                    data["closed_in_run"] = run_id
                conn.execute(
                    update(t.records).where(t.records.c.id == row.id).values(valid_until=when, data=data)
                )
                closed.append(row.id)
            self._pass_revision_on(conn, user_id, [i for i in closed if how.get(i, "revised") == "revised"], by)
        return closed

    def put_data(self, user_id: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Set these top-level entries of the records' data (record id → entries); another
        user's record or an unknown id is left alone."""
        if not entries:
            return
        rec = t.records.c
        with map_sql_errors(), self.tx.begin() as conn:
            for row in conn.execute(select(rec.id, rec.data).where(rec.user_id == user_id, rec.id.in_(list(entries)))):
                conn.execute(update(t.records).where(rec.id == row.id).values(data={**(row.data or {}), **entries[row.id]}))

    def reopen_closed_in_run(self, user_id: str, run_id: str) -> list[str]:
        """Reopen the statements a reflection run closed on its model's word (its undo)."""
        r = t.records.c
        reopened: list[str] = []
        with map_sql_errors(), self.tx.begin() as conn:
            for x in self._closed_statements(conn, user_id):
                if (x.data or {}).get("closed_in_run") != run_id:
                    continue
                data = {k: v for k, v in x.data.items() if k not in ("closed_by", "closed_as", "closed_in_run")}
                conn.execute(update(t.records).where(r.id == x.id).values(valid_until=None, data=data))
                reopened.append(x.id)
        return reopened

    @staticmethod
    def _closed_statements(conn: Connection, user_id: str) -> list[Any]:
        """Id and data of every closed statement of the user."""
        r = t.records.c
        return list(conn.execute(
            select(r.id, r.data).where(
                r.user_id == user_id, r.key >= STATEMENT_KEYS[0], r.key < STATEMENT_KEYS[1], r.valid_until.is_not(None)
            )
        ).all())  # fmt: skip

    @classmethod
    def _pass_revision_on(cls, conn: Connection, user_id: str, revised: list[str], by: str) -> None:
        """Statements that only said again what a now revised statement said are revised too: the
        wish they stated no longer holds (“先给结论” said twice, then “不用先给结论了”)."""
        while revised:
            rows = cls._closed_statements(conn, user_id)
            chained = [x for x in rows if (x.data or {}).get("closed_by") in revised
                       and (x.data or {}).get("closed_as") == "restated"]  # fmt: skip
            for x in chained:
                data = {**x.data, "closed_as": "revised", "closed_by": by}
                conn.execute(update(t.records).where(t.records.c.id == x.id).values(data=data))
            revised = [x.id for x in chained]

    # -- hard delete (the user's explicit "forget") -----------------------------------

    def delete(
        self, user_id: str, record_ids: Sequence[str] | None = None, *, dialogue_id: str | None = None
    ) -> Deleted:
        """Really delete records of a user: all of them (``record_ids`` None), these, or
        (``dialogue_id``) the messages and signals of one dialogue with the dialogue itself.

        Returns the ids deleted and their texts. Versions, replace-log rows and injections go with them, and
        every copy of their text elsewhere (:mod:`tianma.storage.erase`), in one transaction.
        """
        with map_sql_errors(), self.tx.begin() as conn:
            return delete_records(conn, user_id, record_ids, dialogue_id)


if TYPE_CHECKING:
    _conforms: type[MemoryStore] = SqlMemoryStore  # mypy fails here when the store and its Protocol drift


class _Row:
    """Adapts an insert dict to the ``_mapping`` interface of a result row."""

    def __init__(self, mapping: dict[str, Any]) -> None:
        self._mapping = mapping


def chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    """``items`` in lists of at most ``size`` (bound parameters per statement stay bounded)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def dialogue_ids(store: SqlMemoryStore, user_id: str) -> list[str]:
    """Every dialogue of a user, oldest first."""
    query = (
        select(t.dialogues.c.id).where(t.dialogues.c.user_id == user_id).order_by(t.dialogues.c.started_at)
    )
    with map_sql_errors(), store.tx.connect() as conn:
        return [r[0] for r in conn.execute(query)]
