"""``tianma bench keyword``: the keyword channel in SQLite FTS5 against Qdrant Edge sparse vectors.

tianma's keyword channel is an FTS5 table in the SQL store's file
(:class:`~tianma.storage.keyword_index.SqliteKeywordIndex`), written in the same transaction as
the records it indexes. Issue #15 asks whether Edge's sparse vectors should carry it instead (one
engine for both channels, the one a Qdrant server runs). This measures both implementations of
:class:`~tianma.storage.protocols.KeywordIndex` on the same data, with the same tokeniser:

* **A** ``fts5``: the runtime's index, in a fresh SQLite file made as the runtime makes it;
* **B** sparse vectors in an Edge shard (:mod:`tianma.bench.keyword_sparse`), in four variants:
  raw term counts or Edge's ``Bm25`` document model, IDF over the whole shard or over the searched
  user's points only.

What is measured:

* **retrieval quality** of the keyword channel alone on LoCoMo: the ten conversations in one
  store, one user each, every turn (``speaker: text``) a record; each question's tokens are the
  query; R@5 and R@10 over categories 1–4 for ``conv-26`` (dev) and the other nine (test);
* **search latency** p50/p95 of one user's top-30 among ten users owning N/10 texts each, at each
  N of the plan (a synthetic corpus: the perf benchmark's bilingual pool plus LoCoMo's turns when
  present, cycled, each copy made distinct by a number; queries from the perf query stream and
  LoCoMo's questions), timed one by one after an untimed warm-up;
* **upsert throughput**: texts per second in batches of 256 (tokenising included);
* **disk**: bytes allocated per 10k texts, after the SQLite WAL is checkpointed or the shard flushed.

With ``TIANMA_BENCH_POSTGRES_URL`` set (a PostgreSQL server the bench may create and drop
databases on, e.g. ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``), a sixth variant
``postgres`` runs the runtime's PostgreSQL index (:mod:`tianma.storage.keyword_postgres`) the same
way, each case in a database of its own (disk: ``pg_database_size`` growth; settle: ``ANALYZE``,
what autovacuum would do).

Thread pinning (``OMP_NUM_THREADS``) is the caller's and is recorded in the header.
"""

from __future__ import annotations

import itertools
import os
import random
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from tianma.bench.common import BenchContext, console, describe, header, progress_bar, sha256_of, write_json
from tianma.bench.keyword_sparse import BM25_AVG_LEN, BM25_B, BM25_K1, SparseKeywordIndex
from tianma.bench.locomo_data import DEV_CONVERSATION, Conversation, load_locomo
from tianma.bench.perf_corpus import PoolKind, build_pool, query_stream
from tianma.storage.keyword_index import SqliteKeywordIndex
from tianma.storage.protocols import KeywordIndex
from tianma.storage.sql_store import SqlMemoryStore
from tianma.text.tokenize import tokenize

TOP_K = 30
USERS = 10
BATCH = 256
SEED = 15
SEARCHED = "user-0"
KS = (5, 10)
CATEGORIES = (1, 2, 3, 4)
QUALITY_MARGIN = 0.01
"""R@5 (test) one implementation must gain over the other for quality alone to decide."""
POOL: dict[PoolKind, int] = {"event": 2_000, "fact": 500, "preference": 500, "experience": 500}
NAMESPACE = uuid.UUID("6f0c1b1e-15a5-4c1e-9b6e-6b6579776f72")
"""Record ids are UUIDs (as the runtime's are): uuid5 of a name in this namespace."""

VARIANTS = {
    "fts5": "A: SQLite FTS5 (runtime)",
    "sparse_tf": "B: Edge sparse, tf, IDF all users",
    "sparse_tf_user": "B: Edge sparse, tf, IDF per user",
    "sparse_bm25": "B: Edge sparse, Bm25 model, IDF all users",
    "sparse_bm25_user": "B: Edge sparse, Bm25 model, IDF per user",
}
POSTGRES = "postgres"
POSTGRES_LABEL = "A': PostgreSQL tsvector (runtime on PostgreSQL)"
POSTGRES_URL_ENV = "TIANMA_BENCH_POSTGRES_URL"


def variants() -> dict[str, str]:
    """The variants this run measures: :data:`VARIANTS`, plus ``postgres`` when a server is given."""
    return {**VARIANTS, POSTGRES: POSTGRES_LABEL} if os.environ.get(POSTGRES_URL_ENV) else dict(VARIANTS)


@dataclass(frozen=True)
class KeywordPlan:
    sizes: tuple[int, ...]
    """N: texts in the store (ten users, N/10 each) of each latency case."""
    queries: int
    questions: int | None
    """LoCoMo questions per conversation (``None``: all), and only the dev conversation when set."""


PLANS = {
    "smoke": KeywordPlan((2_000,), 30, 12),
    "quick": KeywordPlan((10_000,), 200, None),
    "full": KeywordPlan((10_000, 100_000), 300, None),
}

Advance = Callable[[int], None]


@dataclass
class _Opened:
    """An index in a fresh folder, with what the bench needs around it."""

    index: KeywordIndex
    folder: Path
    settle: Callable[[], None]
    """Make the writes land in the files (SQLite: checkpoint the WAL; Edge: flush)."""
    close: Callable[[], None]
    size: Callable[[], int] | None = None
    """Bytes the index takes, when not the folder's files (a PostgreSQL database)."""

    def disk_bytes(self) -> int:
        """Bytes allocated on disk by every file in the folder (preallocated holes excluded)."""
        if self.size is not None:
            return self.size()
        return sum(p.stat().st_blocks * 512 for p in self.folder.rglob("*") if p.is_file())


@contextmanager
def _postgres(folder: Path) -> Iterator[_Opened]:
    """The runtime's PostgreSQL keyword index in a database of its own, dropped on exit."""
    from sqlalchemy import create_engine, make_url, text

    from tianma.storage.keyword_postgres import PostgresKeywordIndex

    server = make_url(os.environ[POSTGRES_URL_ENV])
    name = f"tianma_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    store = SqlMemoryStore.from_url(server.set(database=name).render_as_string(hide_password=False))

    def analyze() -> None:
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE"))

    def size() -> int:
        with store.engine.connect() as conn:
            return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())

    try:
        yield _Opened(PostgresKeywordIndex(store.engine, store.tx), folder, analyze, store.close, size)
    finally:
        store.close()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def opened(name: str, folder: Path) -> Iterator[_Opened]:
    """Variant ``name`` of :func:`variants` in ``folder`` (created), closed on exit."""
    if name == POSTGRES:
        with _postgres(folder) as result:
            yield result
        return
    if name == "fts5":
        folder.mkdir(parents=True)
        store = SqlMemoryStore.from_url(
            f"sqlite:///{folder / 'memory.db'}"
        )  # the runtime's schema and pragmas
        result = _Opened(SqliteKeywordIndex(store.engine, store.tx), folder, store.compact, store.close)
    else:
        _, weighting, *scope = name.split("_")
        sparse = SparseKeywordIndex(
            folder, weighting="bm25" if weighting == "bm25" else "tf", idf="user" if scope else "all"
        )
        result = _Opened(sparse, folder, sparse.flush, sparse.close)
    try:
        yield result
    finally:
        result.close()


def record_id(name: str) -> str:
    """A stable UUID record id for a dataset name."""
    return str(uuid.uuid5(NAMESPACE, name))


def _advancer(bar: Any, task: Any) -> Advance:
    def advance(k: int) -> None:
        bar.advance(task, k)

    return advance


# -- quality ------------------------------------------------------------------------------------


def _quality_of(index: KeywordIndex, conversations: list[Conversation], plan: KeywordPlan,
                advance: Advance) -> dict[str, dict[str, float]]:  # fmt: skip
    """R@5/R@10 (categories 1–4) per split, every conversation indexed as one user first."""
    for conv in conversations:
        items = [(record_id(f"{conv.sample_id}/{d.id}"), d.line) for d in conv.docs]
        for start in range(0, len(items), BATCH):
            index.upsert(conv.sample_id, items[start : start + BATCH])
    rows: dict[str, list[dict[str, float]]] = {"dev": [], "test": []}
    for conv in conversations:
        back = {record_id(f"{conv.sample_id}/{d.id}"): d.id for d in conv.docs}
        for question in _questions(conv, plan):
            hits = index.search(conv.sample_id, tokenize(question.text), max(KS))
            found = [back[rid] for rid, _ in hits]
            rows["dev" if conv.sample_id == DEV_CONVERSATION else "test"].append(
                {f"R@{k}": len(question.evidence & set(found[:k])) / len(question.evidence) for k in KS}
            )
            advance(1)
    return {
        split: {
            "n": len(part),
            **{f"R@{k}": round(float(np.mean([r[f"R@{k}"] for r in part])), 4) for k in KS},
        }
        for split, part in rows.items()
        if part
    }


def _questions(conv: Conversation, plan: KeywordPlan) -> list[Any]:
    scored = [q for q in conv.questions if q.category in CATEGORIES]
    return scored if plan.questions is None else scored[: plan.questions]


def _quality(conversations: list[Conversation], plan: KeywordPlan, root: Path, bar: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    total = sum(len(_questions(c, plan)) for c in conversations)
    for name in variants():
        task = bar.add_task(f"LoCoMo {name}", total=total)
        with opened(name, root / f"quality-{name}") as store:
            out[name] = _quality_of(store.index, conversations, plan, _advancer(bar, task))
    return out


# -- speed and size -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Corpus:
    pool: list[str]
    queries: list[list[str]]
    """Token lists, none empty."""


def _corpus(conversations: list[Conversation], count: int) -> _Corpus:
    """The bilingual perf pool plus LoCoMo's turns; queries from the perf stream and LoCoMo."""
    pool = [p.text for p in build_pool(POOL, SEED)] + [d.line for c in conversations for d in c.docs]
    random.Random(SEED).shuffle(pool)
    asked = [tokenize(q) for q in itertools.islice(query_stream(SEED), count)]
    asked += [tokenize(q.text) for c in conversations for q in c.questions]
    queries = [list(q) for q in asked if q]
    random.Random(SEED).shuffle(queries)
    return _Corpus(pool, queries[:count])


def _speed(name: str, size: int, corpus: _Corpus, root: Path, advance: Advance) -> dict[str, Any]:
    """One index of ``size`` texts (ten users): upsert rate, disk bytes, search latency."""
    rng = random.Random(SEED + size)
    per_user = size // USERS
    tokenize.cache_clear()  # every variant tokenises the texts itself, none from the cache
    with opened(name, root / f"speed-{name}-{size}") as store:
        store.settle()
        empty = store.disk_bytes()
        started, searched = time.perf_counter(), 0
        for u in range(USERS):
            for start in range(0, per_user, BATCH):
                stop = min(start + BATCH, per_user)
                items = [
                    (
                        str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                        f"{corpus.pool[i % len(corpus.pool)]} {i}",
                    )
                    for i in range(u * per_user + start, u * per_user + stop)
                ]
                store.index.upsert(f"user-{u}", items)
                advance(stop - start)
                searched += stop - start
        rate = searched / (time.perf_counter() - started)
        store.settle()
        used = store.disk_bytes() - empty
        store.index.search(SEARCHED, corpus.queries[0], TOP_K)  # warm-up, untimed
        ms, returned = [], []
        for tokens in corpus.queries:
            began = time.perf_counter()
            hits = store.index.search(SEARCHED, tokens, TOP_K)
            ms.append((time.perf_counter() - began) * 1000)
            returned.append(len(hits))
            advance(1)
        owned = store.index.count(SEARCHED)
    return {
        "texts": size, "user_texts": owned, "users": USERS,
        "search_ms": describe(ms, 3), "hits_mean": round(float(np.mean(returned)), 1),
        "upsert_texts_per_s": round(rate, 1),
        "disk_bytes": used, "bytes_per_10k": round(used * 10_000 / size),
    }  # fmt: skip


def _speeds(plan: KeywordPlan, corpus: _Corpus, root: Path, bar: Any) -> dict[str, dict[str, Any]]:
    names = variants()
    out: dict[str, dict[str, Any]] = {name: {} for name in names}
    for size in plan.sizes:
        for name in names:
            task = bar.add_task(f"{name} N={size:,}", total=size + len(corpus.queries))
            out[name][str(size)] = _speed(name, size, corpus, root, _advancer(bar, task))
    return out


# -- decision -----------------------------------------------------------------------------------


def best_sparse(quality: dict[str, Any]) -> str:
    """The sparse variant with the best dev R@5 (chosen on conv-26 only, never on the test split)."""
    sparse = [n for n in VARIANTS if n != "fts5"]
    if not quality:
        return sparse[0]
    return max(sparse, key=lambda n: (quality[n].get("dev", {}).get("R@5", 0.0), -sparse.index(n)))


def choice(payload: dict[str, Any]) -> str:
    """Which keyword channel to keep, and why: quality first, then consistency, then latency."""
    quality, speed = payload["quality"], payload["speed"]
    sparse = best_sparse(quality)
    size = str(max(int(s) for s in speed["fts5"]))
    lat = {n: speed[n][size]["search_ms"]["p50"] for n in ("fts5", sparse)}
    latency = f"search p50 at N={int(size):,}: FTS5 {lat['fts5']:.2f} ms, {sparse} {lat[sparse]:.2f} ms"
    split = "test" if quality and "test" in quality["fts5"] else "dev"
    if not quality:
        return f"fts5 (no LoCoMo data, quality not measured; consistency decides: same SQL transaction); {latency}"
    a, b = quality["fts5"][split]["R@5"], quality[sparse][split]["R@5"]
    recall = f"R@5 ({split}) FTS5 {100 * a:.1f} vs {sparse} {100 * b:.1f}"
    if b - a > QUALITY_MARGIN:
        return f"{sparse}: better recall, {recall}; {latency}"
    if a - b > QUALITY_MARGIN:
        return f"fts5: better recall, {recall}; {latency}"
    return f"fts5: recall within {100 * QUALITY_MARGIN:.0f} point ({recall}), consistency decides (FTS5 rows commit with the records); {latency}"


def run(ctx: BenchContext) -> dict[str, Any]:
    """Measure, print, write the JSON; returns the payload."""
    plan = PLANS[ctx.mode]
    payload = header("keyword", ctx.started, ctx.mode) | {
        "plan": plan.__dict__, "top_k": TOP_K, "users": USERS, "batch": BATCH, "seed": SEED,
        "variants": variants(), "bm25": {"k1": BM25_K1, "b": BM25_B, "avg_len": BM25_AVG_LEN},
    }  # fmt: skip
    conversations: list[Conversation] = []
    path = ctx.data / "locomo" / "locomo10.json" if ctx.data is not None else None
    if path is not None and path.is_file():
        conversations = load_locomo(path, {DEV_CONVERSATION} if plan.questions is not None else None)
        payload["dataset"] = {"path": str(path), "sha256": sha256_of(path)}
    else:
        payload["note"] = (
            "LoCoMo data not found: retrieval quality not measured, corpus is the perf pool alone"
        )
        console.print(f"[yellow]keyword:[/] {payload['note']}")
    corpus = _corpus(conversations, plan.queries)
    payload["corpus"] = {"distinct_texts": len(corpus.pool), "queries": len(corpus.queries)}
    ctx.cache.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="keyword-", dir=ctx.cache) as root,
        progress_bar(ctx.show_progress) as bar,
    ):
        payload["quality"] = _quality(conversations, plan, Path(root), bar) if conversations else {}
        payload["speed"] = _speeds(plan, corpus, Path(root), bar)
    payload["best_sparse"] = best_sparse(payload["quality"])
    payload["choice"] = choice(payload)
    console.print(_table(payload))
    console.print(f"keyword: {payload['choice']}")
    payload["file"] = str(write_json(ctx.result_path("keyword"), payload))
    return payload


def _pct(part: dict[str, Any] | None, key: str) -> str:
    return "—" if not part else f"{100 * part[key]:.1f}"


def rows(payload: dict[str, Any]) -> list[list[str]]:
    """One row per variant: dev/test R@5 and R@10, then p50/p95, upserts/s and bytes per size."""
    out = []
    for name, label in payload["variants"].items():
        q = payload["quality"].get(name, {})
        row = [label, *(_pct(q.get(s), f"R@{k}") for s in ("dev", "test") for k in KS)]
        for size in sorted(payload["speed"][name], key=int):
            c = payload["speed"][name][size]
            row += [f"{c['search_ms']['p50']:.2f}", f"{c['search_ms']['p95']:.2f}"]
        largest = payload["speed"][name][max(payload["speed"][name], key=int)]
        row += [f"{largest['upsert_texts_per_s']:,.0f}", f"{largest['bytes_per_10k'] / 1e6:.2f}"]
        out.append(row)
    return out


def columns(payload: dict[str, Any]) -> list[str]:
    sizes = sorted(payload["speed"]["fts5"], key=int)
    cols = ["keyword channel", "dev R@5", "dev R@10", "test R@5", "test R@10"]
    for size in sizes:
        cols += [f"p50 ms {int(size) // 1000}k", f"p95 ms {int(size) // 1000}k"]
    largest = int(sizes[-1]) // 1000
    return [*cols, f"upserts/s ({largest}k)", f"MB per 10k ({largest}k)"]


def _table(payload: dict[str, Any]) -> Table:
    table = Table(
        title=f"Keyword channel — LoCoMo cat. 1–4, top-{payload['top_k']} of 1 of {USERS} users / 关键词通道"
    )
    for i, col in enumerate(columns(payload)):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows(payload):
        table.add_row(*row)
    return table


def section(payload: dict[str, Any], plots: Path) -> str:
    """The keyword channel's section: every variant side by side, and the choice."""
    cols = columns(payload)
    lines = [
        "## Keyword channel: SQLite FTS5 vs Qdrant Edge sparse vectors", "",
        f"Mode `{payload['mode']}`; LoCoMo R@k over categories 1–4 of the keyword channel alone "
        f"(ten conversations in one store, one user each); latency of one user's top-{payload['top_k']} "
        f"among {payload['users']} users owning N/{payload['users']} texts each.", "",
        "| " + " | ".join(cols) + " |", "|---" + "|---:" * (len(cols) - 1) + "|",
        *("| " + " | ".join(row) + " |" for row in rows(payload)), "",
        f"Choice: **{payload['choice']}**.",
    ]  # fmt: skip
    return "\n".join(lines)
