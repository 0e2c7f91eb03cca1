"""Fill a tianma data home with N memories of one user, fast, for the performance benchmark.

A pool of distinct texts is embedded once; N records cycle the pool with a variant suffix in
the text and the pool vector plus gaussian noise (re-normalised). That keeps the size of the
SQL table, the FTS5 index and the Qdrant collection, hence the search cost, of a real store of
N memories; it says nothing about retrieval quality (near-duplicates cluster).

Rows go straight into SQLite with SQLAlchemy Core in the shape ``SqlMemoryStore`` writes,
keyword rows with tianma's tokenizer, owner token and rowid (derived from the record id, as
``SqliteKeywordIndex`` does, so later replaces and deletes find them), in the same transaction
as their records; vectors go through ``QdrantVectorIndex.upsert``.

Embedding 100k texts would take most of an hour on one core, which is why the pool is embedded
once (and cached under the results folder's ``cache/``) and cycled with noise instead.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import func, select, text

from tianma import Runtime
from tianma.bench.common import progress_bar
from tianma.bench.perf_corpus import REPLIES, PoolKind, PoolText
from tianma.bench.systems import CachingEmbedder
from tianma.storage import schema as t
from tianma.storage.keyword_index import owner_token, row_id
from tianma.storage.protocols import Embedder, Matrix
from tianma.storage.records import Provenance
from tianma.storage.sql_store import new_id
from tianma.text.entities import tags as tags_of
from tianma.text.tokenize import tokenize

USER_ID = "bench-user"
POOL_COUNTS: dict[PoolKind, int] = {"event": 1000, "fact": 200, "preference": 150, "experience": 150}
"""Distinct texts embedded once, by the kind of record they read like."""
KIND_MIX: dict[PoolKind, float] = {"event": 0.80, "fact": 0.08, "preference": 0.04, "experience": 0.08}
"""Share of each kind among the N records (all active, all indexed)."""
NOISE_SIGMA = 0.01
"""Per-dimension gaussian noise on a cycled pool vector (cosine ≈ 0.98 to the original)."""
BATCH = 1024
HISTORY_DAYS = 730
HISTORY_END = datetime(2026, 6, 1, tzinfo=UTC)
"""The populated history spans HISTORY_DAYS up to here."""
STRATEGIES = 12
"""Strategy records added on top of the N memories (two are output redlines)."""
INJECTIONS_PER_EVENT = 3
KW_TABLE = "kw_index"
"""``tianma.storage.keyword_index._TABLE``; the row count is checked after populating."""

_ROW_DEFAULTS: dict[str, Any] = {
    "key": None, "scope": "global", "tags": [], "confidence": 0.5, "importance": 0.5, "hit_count": 0,
    "last_hit_at": None, "status": "active", "version": 1, "provenance": {}, "data": {},
    "dialogue_id": None, "role": None, "speaker": None, "reply": None, "at": None,
    "external_id": None, "error": None,
}  # fmt: skip
"""Columns of ``records`` as ``SqlMemoryStore.add_record`` fills them by default."""


def record_row(kind: str, content: str, when: datetime, **fields: Any) -> dict[str, Any]:
    """A full ``records`` row, mirroring ``SqlMemoryStore._event_row`` / ``add_record``."""
    row = {"id": new_id(), "user_id": USER_ID, "kind": kind, "content": content}
    return {**row, **_ROW_DEFAULTS, "created_at": when, "updated_at": when, **fields}


def embed_pool(
    embedder: Embedder, pool: Sequence[PoolText], cache_dir: Path, show_progress: bool = True
) -> Matrix:
    """Passage vectors of the pool, through the benchmarks' embedding cache (one file per
    embedder): texts embedded before are read back, only new ones are embedded."""
    cache = CachingEmbedder(embedder, cache_dir / f"pool-{embedder.name}.npz")
    texts = [p.text for p in pool]
    with progress_bar(show_progress) as progress:
        task = progress.add_task(f"embedding the pool ({len(pool)} texts, once)", total=len(pool))
        for start in range(0, len(texts), 64):
            cache.embed_passages(texts[start : start + 64])
            progress.advance(task, len(texts[start : start + 64]))
    cache.save()
    return cache.embed_passages(texts)


Batch = tuple[list[dict[str, Any]], list[dict[str, Any]], Matrix]
"""Record rows, injection rows and the records' vectors."""


@dataclass
class RecordPlanner:
    """Builds the N records in time order: pool text + variant suffix, pool vector + noise."""

    pool: Sequence[PoolText]
    pool_vectors: Matrix
    size: int
    rng: np.random.Generator
    dialogues: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Historical dialogues: started_at, ended_at, turns."""
    _by_kind: dict[PoolKind, list[int]] = field(init=False)
    _seen: dict[PoolKind, int] = field(init=False)
    _used_keys: set[str] = field(default_factory=set)
    _open: dict[str, Any] = field(default_factory=dict)
    _event_ids: list[str] = field(default_factory=list)
    _record_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_kind = {k: [i for i, p in enumerate(self.pool) if p.kind == k] for k in KIND_MIX}
        self._seen = dict.fromkeys(KIND_MIX, 0)

    def batches(self, batch: int) -> Iterator[Batch]:
        """Every ``batch`` records, oldest first, spread evenly over the history."""
        kinds = list(KIND_MIX)
        drawn = self.rng.choice(len(kinds), size=self.size, p=list(KIND_MIX.values()))
        step = timedelta(days=HISTORY_DAYS) / self.size
        for start in range(0, self.size, batch):
            rows: list[dict[str, Any]] = []
            injections: list[dict[str, Any]] = []
            picks: list[int] = []
            for i in range(start, min(start + batch, self.size)):
                row, pick = self._one(kinds[drawn[i]], HISTORY_END - timedelta(days=HISTORY_DAYS) + step * i)
                if row["kind"] == "event":
                    injections.extend(self._injections(row["id"]))
                    self._event_ids.append(row["id"])
                self._record_ids.append(row["id"])
                rows.append(row)
                picks.append(pick)
            noise = self.rng.normal(0.0, NOISE_SIGMA, (len(picks), self.pool_vectors.shape[1]))
            noisy = self.pool_vectors[picks] + noise
            yield rows, injections, (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)

    def _one(self, kind: PoolKind, when: datetime) -> tuple[dict[str, Any], int]:
        ids = self._by_kind[kind]
        n, self._seen[kind] = self._seen[kind], self._seen[kind] + 1
        pick, variant = ids[n % len(ids)], n // len(ids)
        entry = self.pool[pick]
        content = entry.text if variant == 0 else f"{entry.text} (v{variant})"
        if kind == "event":
            return self._event(content, when), pick
        # Reflection supersedes a fact with the same key, so only one active record per key keeps it.
        key = entry.key if entry.key and entry.key not in self._used_keys else None
        if key:
            self._used_keys.add(key)
        row = record_row(
            kind,
            content,
            when,
            key=key,
            confidence=round(float(self.rng.uniform(0.4, 0.95)), 3),
            importance=round(float(self.rng.uniform(0.3, 0.9)), 3),
            hit_count=int(self.rng.poisson(1.0)),
            provenance=Provenance(event_ids=tuple(self._event_ids[-1:]), source="bench").to_json(),
        )
        return row, pick

    def _event(self, content: str, when: datetime) -> dict[str, Any]:
        if not self._open or self._open["left"] == 0:
            self._open = {"id": f"hist-{len(self.dialogues):06d}", "left": int(self.rng.integers(4, 21))}
            self.dialogues[self._open["id"]] = {"started_at": when, "ended_at": when, "turns": 0}
        self._open["left"] -= 1
        did = self._open["id"]
        self.dialogues[did].update(ended_at=when, turns=self.dialogues[did]["turns"] + 1)
        return record_row(
            "event",
            content,
            when,
            scope=f"dialogue:{did}",
            confidence=1.0,
            dialogue_id=did,
            role="user",
            reply=REPLIES[int(self.rng.integers(len(REPLIES)))],
            at=when,
            provenance=Provenance(dialogue_ids=(did,), source="bench").to_json(),
        )

    def _injections(self, event_id: str) -> list[dict[str, Any]]:
        """What an earlier turn injected: a few earlier records (feeds ``injections_of``)."""
        if not self._record_ids:
            return []
        picks = sorted({int(x) for x in self.rng.integers(len(self._record_ids), size=INJECTIONS_PER_EVENT)})
        base = {"event_id": event_id, "user_id": USER_ID, "role": "memory", "score": 0.5, "explored": 0}
        return [{**base, "record_id": self._record_ids[j], "rank": rank} for rank, j in enumerate(picks)]


def strategy_rows() -> list[dict[str, Any]]:
    """A handful of promoted strategies; the first two are output redlines."""
    domains = ("schedule", "health", "finance", "general")
    rows = []
    for i in range(STRATEGIES):
        data: dict[str, Any] = {"trigger": {"domains": [domains[i % 4]]}, "priority": i % 3, "weight": 0.6}
        if i < 2:
            data["redline"] = {"domains": ["health"], "action": "append", "text": "提醒：具体用药请遵医嘱。"}
        content = f"策略 {i}: 先确认用户的时间安排再给建议"
        provenance = Provenance(source="bench").to_json()
        rows.append(
            record_row("strategy", content, HISTORY_END, data=data, confidence=0.7, provenance=provenance)
        )
    return rows


def populate(rt: Runtime, planner: RecordPlanner, show_progress: bool = True) -> dict[str, float]:
    """Write ``planner.size`` records to SQL, the keyword index, the tag graph and the vector index;
    seconds per phase."""
    engine = rt.memory.store.engine
    timing = {"sql_fts_s": 0.0, "qdrant_s": 0.0}  # sql_fts_s: records, keyword rows and tags
    owner = owner_token(USER_ID)
    kw_insert = text(
        f"INSERT INTO {KW_TABLE}(rowid, record_id, owner, body) VALUES (:rowid, :rid, :owner, :body)"
    )
    with progress_bar(show_progress) as progress:
        task = progress.add_task(f"populating {planner.size:,} memories", total=planner.size)
        for rows, injections, vectors in planner.batches(BATCH):
            began = time.perf_counter()
            kw_rows = [
                {
                    "rowid": row_id(r["id"]),
                    "rid": r["id"],
                    "owner": owner,
                    "body": " ".join(tokenize(r["content"])),
                }
                for r in rows
            ]
            with engine.begin() as conn:
                conn.execute(t.records.insert(), rows)
                if injections:
                    conn.execute(t.injections.insert(), injections)
                conn.execute(kw_insert, kw_rows)
            rt.memory.tags.upsert(USER_ID, [(r["id"], tags_of(r["content"])) for r in rows])
            timing["sql_fts_s"] += time.perf_counter() - began
            began = time.perf_counter()
            rt.memory.vectors.upsert(USER_ID, [r["id"] for r in rows], vectors)
            timing["qdrant_s"] += time.perf_counter() - began
            progress.advance(task, len(rows))
    with engine.begin() as conn:
        conn.execute(t.records.insert(), strategy_rows())
        dialogue_rows = [{"id": did, "user_id": USER_ID, **d} for did, d in planner.dialogues.items()]
        conn.execute(t.dialogues.insert(), dialogue_rows)
    return timing


def count_stored(rt: Runtime) -> dict[str, int]:
    """Rows and index entries of the bench user, to check the populate step."""
    store = rt.memory.store
    by_kind = select(t.records.c.kind, func.count()).where(t.records.c.user_id == USER_ID)
    with store.engine.connect() as conn:
        kinds = {f"kind_{kind}": int(n) for kind, n in conn.execute(by_kind.group_by(t.records.c.kind))}
    return {
        "records": store.count(USER_ID),
        "vectors": rt.memory.vectors.count(USER_ID),
        "keyword_rows": rt.memory.keywords.count(USER_ID),
        "keyed_facts": len(store.facts_with_keys(USER_ID)),
        **kinds,
    }
