"""``tianma bench vectors``: the layout of the embedded vector index, measured.

tianma keeps dense vectors in Qdrant Edge (:mod:`tianma.storage.edge_index`): one shard per data
home, each point tagged with its user in a tenant payload index, every search filtered by that
user, exact search (no HNSW). This measures that choice against the alternatives, on random
384-d unit vectors (fixed seed) with queries made of stored vectors plus a little noise:

* one shard, **one user owning all N points** (the worst case of a shared shard): search p50/p95,
  upsert points/s, and ``compact()`` after deleting one point (the vacuum that follows a forget);
* one shard, **ten users owning N/10 each**: the search of one of them;
* **a shard of that user alone** with the same N/10 points (the per-user layout);
* **the previous engine**, qdrant-client local mode with a collection per user, at a capped
  count (its upserts are slow), the same as N/10 in every mode.

Every search is a top-30 of one user, timed one by one after an untimed warm-up. Thread pinning
(``OMP_NUM_THREADS``) is the caller's and is recorded in the header.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from tianma.bench.common import BenchContext, console, describe, header, progress_bar, write_json
from tianma.storage.edge_index import EdgeVectorIndex
from tianma.storage.protocols import Matrix, VectorIndex
from tianma.storage.qdrant_index import QdrantVectorIndex

DIM = 384
TOP_K = 30
USERS = 10
SEED = 20_384
NOISE = 0.3
"""Length of the noise added to a stored unit vector to make a query."""
SHARED_BUDGET_MS = 2.0
"""Extra search time (p50) a shared shard may cost over a per-user shard and still be the choice."""
CHUNK = 1_000
SEARCHED = "user-0"


@dataclass(frozen=True)
class VectorPlan:
    points: int
    """N: the points of the shared shard."""
    queries: int
    legacy_points: int
    """Points of the qdrant-client local-mode case (its upserts are slow: capped, = N/10)."""


PLANS = {
    "smoke": VectorPlan(2_000, 20, 200),
    "quick": VectorPlan(20_000, 100, 2_000),
    "full": VectorPlan(100_000, 200, 10_000),
}
CASES = {
    "shared_one_user": "shared shard, one user owns all points",
    "shared_ten_users": "shared shard, ten users, one searched",
    "own_shard": "per-user shard (the user alone)",
    "qdrant_local": "qdrant-client local mode, collection per user",
}

Owners = Sequence[tuple[str, slice]]
Advance = Callable[[int], None]


@dataclass(frozen=True)
class _Data:
    ids: list[str]
    vectors: Matrix
    queries: Matrix
    sources: list[str]
    """The id each query was made from (all of them the searched user's in every case)."""


def _unit(rows: Matrix) -> Matrix:
    unit: Matrix = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _data(plan: VectorPlan) -> _Data:
    rng = np.random.default_rng(SEED)
    vectors = _unit(rng.standard_normal((plan.points, DIM), dtype=np.float32))
    ids = [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(plan.points)]
    pool = min(plan.points // USERS, plan.legacy_points)  # rows the searched user owns everywhere
    picks = rng.choice(pool, size=plan.queries, replace=plan.queries > pool)
    noise = rng.standard_normal((plan.queries, DIM), dtype=np.float32) * np.float32(NOISE / np.sqrt(DIM))
    return _Data(ids, vectors, _unit(vectors[picks] + noise), [ids[i] for i in picks])


def _fill(index: VectorIndex, owners: Owners, data: _Data, advance: Advance) -> float:
    """Upsert every owner's rows in chunks (and flush an Edge shard); returns points per second."""
    started, count = time.perf_counter(), 0
    for user, rows in owners:
        for start in range(rows.start, rows.stop, CHUNK):
            stop = min(start + CHUNK, rows.stop)
            index.upsert(user, data.ids[start:stop], data.vectors[start:stop])
            advance(stop - start)
            count += stop - start
    if isinstance(index, EdgeVectorIndex):
        index.flush()
    return round(count / (time.perf_counter() - started), 1)


def _search(index: VectorIndex, data: _Data, advance: Advance) -> dict[str, Any]:
    """Per-query latency (ms) of the searched user's top-30, and how often the source came first."""
    index.search(SEARCHED, data.queries[0], TOP_K)  # warm-up, untimed
    ms, first = [], 0
    for query, source in zip(data.queries, data.sources, strict=True):
        started = time.perf_counter()
        hits = index.search(SEARCHED, query, TOP_K)
        ms.append((time.perf_counter() - started) * 1000)
        first += bool(hits) and hits[0][0] == source
        advance(1)
    return {"search_ms": describe(ms, 3), "source_first": round(first / len(data.sources), 3)}


def _case(index: VectorIndex, owners: Owners, data: _Data, advance: Advance) -> dict[str, Any]:
    rate = _fill(index, owners, data, advance)
    return {
        "points": sum(rows.stop - rows.start for _, rows in owners),
        "user_points": owners[0][1].stop - owners[0][1].start,
        "users": len(owners),
        **_search(index, data, advance),
        "upsert_points_per_s": rate,
    }


def _measure(plan: VectorPlan, root: Path, bar: Any) -> dict[str, dict[str, Any]]:
    data, n, tenth = _data(plan), plan.points, plan.points // USERS
    plans: dict[str, Owners] = {
        "shared_one_user": [(SEARCHED, slice(0, n))],
        "shared_ten_users": [(f"user-{u}", slice(u * tenth, (u + 1) * tenth)) for u in range(USERS)],
        "own_shard": [(SEARCHED, slice(0, tenth))],
        "qdrant_local": [(SEARCHED, slice(0, plan.legacy_points))],
    }
    cases: dict[str, dict[str, Any]] = {}
    for name, owners in plans.items():
        task = bar.add_task(name, total=sum(r.stop - r.start for _, r in owners) + plan.queries)

        def advance(k: int, task: Any = task) -> None:
            bar.advance(task, k)

        opened: VectorIndex = (
            QdrantVectorIndex.from_options(dim=DIM, path=root / name)
            if name == "qdrant_local"
            else EdgeVectorIndex(root / name, DIM)
        )
        with closing(opened) as index:
            cases[name] = {"label": CASES[name], **_case(index, owners, data, advance)}
            if name == "shared_one_user":  # the vacuum after a forget: one point gone, then compact
                index.delete(SEARCHED, [data.ids[-1]])  # not a query's source (those are in the first tenth)
                started = time.perf_counter()
                index.compact()
                cases[name]["compact_s"] = round(time.perf_counter() - started, 3)
    return cases


def _choice(cases: dict[str, dict[str, Any]]) -> str:
    """The layout the numbers support, and why (shared shard at N/10 against a per-user shard)."""
    shared, own = cases["shared_ten_users"], cases["own_shard"]
    extra = shared["search_ms"]["p50"] - own["search_ms"]["p50"]
    layout = "one shard per home" if extra <= SHARED_BUDGET_MS else "a shard per user"
    whole = cases["shared_one_user"]
    return (
        f"{layout}: sharing costs {extra:+.2f} ms p50 per search against a shard of the user alone at "
        f"{own['user_points']:,} points (budget {SHARED_BUDGET_MS:g} ms); one user owning all "
        f"{whole['points']:,}: {whole['search_ms']['p50']:.2f} ms p50"
    )


def run(ctx: BenchContext) -> dict[str, Any]:
    """Measure, print, write the JSON; returns the payload."""
    plan = PLANS[ctx.mode]
    payload = header("vectors", ctx.started, ctx.mode) | {
        "plan": plan.__dict__, "dim": DIM, "top_k": TOP_K, "users": USERS, "seed": SEED, "noise": NOISE,
    }  # fmt: skip
    ctx.cache.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="vectors-", dir=ctx.cache) as root,
        progress_bar(ctx.show_progress) as bar,
    ):
        payload["cases"] = _measure(plan, Path(root), bar)
    payload["choice"] = _choice(payload["cases"])
    console.print(_table(payload))
    console.print(
        f"compact after deleting one point: {payload['cases']['shared_one_user']['compact_s']:.3f} s"
    )
    console.print(f"vectors: {payload['choice']}")
    payload["file"] = str(write_json(ctx.result_path("vectors"), payload))
    return payload


def _rows(payload: dict[str, Any]) -> list[list[str]]:
    return [
        [
            c["label"], f"{c['points']:,}", f"{c['user_points']:,}", f"{c['search_ms']['p50']:.2f}",
            f"{c['search_ms']['p95']:.2f}", f"{c['upsert_points_per_s']:,.0f}", f"{c['source_first']:.0%}",
        ]
        for c in payload["cases"].values()
    ]  # fmt: skip


COLUMNS = (
    "layout",
    "points in shard",
    "user's points",
    "search p50 ms",
    "p95 ms",
    "upsert points/s",
    "source first",
)


def _table(payload: dict[str, Any]) -> Table:
    table = Table(
        title=f"Vector index layouts — filtered top-{payload['top_k']}, {payload['dim']}-d / 向量索引布局"
    )
    for i, col in enumerate(COLUMNS):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in _rows(payload):
        table.add_row(*row)
    return table


def section(payload: dict[str, Any], plots: Path) -> str:
    """The report's section: the cases side by side, and the choice they support."""
    cases = payload["cases"]
    own, legacy = cases["own_shard"], cases["qdrant_local"]
    lines = [
        "## Vector index layout (Qdrant Edge)", "",
        f"Random {payload['dim']}-d unit vectors, queries are stored vectors plus noise, each search a "
        f"top-{payload['top_k']} of one user, exact search, mode `{payload['mode']}`.", "",
        "| " + " | ".join(COLUMNS) + " |", "|---" + "|---:" * (len(COLUMNS) - 1) + "|",
        *("| " + " | ".join(row) + " |" for row in _rows(payload)), "",
        f"Choice: **{payload['choice']}**. `compact()` after deleting one point of "
        f"{cases['shared_one_user']['points']:,}: {cases['shared_one_user']['compact_s']:.3f} s. "
        f"Against the previous engine at {legacy['user_points']:,} points: search p50 "
        f"{legacy['search_ms']['p50']:.2f} ms vs {own['search_ms']['p50']:.2f} ms in an Edge shard of "
        f"{own['user_points']:,}, upserts {legacy['upsert_points_per_s']:,.0f} vs "
        f"{cases['shared_one_user']['upsert_points_per_s']:,.0f} points/s.",
    ]  # fmt: skip
    return "\n".join(lines)
