"""Memory overhead per chat turn (everything but the chat model), and the memory block's tokens.

What is measured. For each store size a fresh data home (SQLite file, Qdrant local mode,
checkpoint file) is filled with N memories of one user (:mod:`tianma.bench.perf_populate`),
then ``Runtime.chat`` runs ``warmup`` unmeasured and ``turns`` measured turns with varied
Chinese and English messages in several dialogues, with simulated ``at`` times advancing
(minutes within a dialogue, hours between dialogues). The chat model is ``ScriptedChatModel``
(canned replies, ~0 ms); its ``chat scripted`` span is subtracted from each turn's wall time
anyway, so *overhead = wall time of Runtime.chat − chat model call*. An OpenTelemetry SDK
tracer provider with an in-memory exporter collects the ``tianma.node <name>`` spans for a
per-node breakdown, and the ``embeddings`` spans for the share of the e5 embedder. Tracing is
on while measuring (about a dozen spans a turn, as when telemetry is enabled; its own cost is
not measured separately). A size is measured in several *runs*, each over a freshly reopened
runtime, so the report can give medians across runs and their spread, not one lucky pass.

The store is closed and reopened after populating, before measuring: that is the state a user
is in after any restart, and it matters for Qdrant local mode, which keeps the vectors of a
collection built in the current process as float32 and upcasts the whole matrix to float64 on
every query (~85 ms at 100k), while a reopened collection is loaded as float64 (~23 ms).

How the store is populated (fast, and what it preserves): see :mod:`tianma.bench.perf_populate`
— a pool of embedded statements cycled with a variant suffix and gaussian vector noise keeps
the index sizes and search cost of a real store of N memories, not its retrieval quality.

Tokens. The scripted chat model keeps every prompt it receives, so each measured turn's
*memory block* — the part of the system prompt under 【已知用户信息】【用户偏好】【历史有效策略】
that :func:`tianma.prompting.memory_block` built — is counted exactly as sent (cl100k). It is
compared with a *full-context* prompt for the same history: every stored message of the user
and its reply (what a memory-less assistant would have to resend), plus the new message.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from tianma import Runtime, Settings
from tianma.bench.common import describe, progress_bar, token_counter
from tianma.bench.perf_corpus import REPLIES, query_stream
from tianma.bench.perf_populate import HISTORY_END, USER_ID
from tianma.llm.scripted import ScriptedChatModel
from tianma.prompting import MEMORY_INTRO
from tianma.settings import NODE_NAMES, LearningSettings
from tianma.storage import schema as t
from tianma.storage.protocols import Embedder
from tianma.telemetry import semconv as sc


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """How the turns of one size are run."""

    turns: int
    warmup: int
    runs: int
    seed: int = 20261129


RUN_DAYS = 60
"""Simulated days between the starts of two runs (210 turns span about three weeks)."""


@dataclass(slots=True)
class TurnSample:
    """Timings (ms) and token counts of one measured turn."""

    wall_ms: float
    chat_ms: float
    overhead_ms: float
    nodes_ms: dict[str, float]
    embed_ms: dict[str, float]
    """Wall time with at least one embedding running, by the node that embedded.

    The message is embedded as a query and as a passage at once on two engines (in
    retrieve), so their spans overlap; this is the time the turn waited, not their sum.
    """
    embed_engine_ms: float
    """Sum of all embedding spans (both engines' busy time)."""
    outside_nodes_ms: float
    """Wall time outside the six node spans: LangGraph, checkpoint read/write, result building."""
    injected: int
    memory_tokens: int = 0
    """cl100k tokens of the memory block in the system prompt (0 when nothing was injected)."""
    prompt_tokens: int = 0
    """cl100k tokens of the whole prompt sent: identity, memory block, summary, window."""
    full_context_tokens: int = 0
    """cl100k tokens of every stored message and reply of the user, plus this message."""


@dataclass(slots=True)
class RunResult:
    """One pass of warm-up and measured turns over a freshly reopened runtime."""

    reopen_s: float
    samples: list[TurnSample] = field(default_factory=list)


# -- tracing ------------------------------------------------------------------------------


@cache
def install_tracing() -> InMemorySpanExporter:
    """An in-memory exporter on the global SDK tracer provider (installed when there is none).

    A global provider can be set only once per process, so when the application (or a test
    session) already installed an SDK provider, the exporter is added to it instead.
    """
    exporter = InMemorySpanExporter()
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        current.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    return exporter


def span_ms(span: ReadableSpan) -> float:
    return ((span.end_time or 0) - (span.start_time or 0)) / 1e6


def embedding_ms(spans: Sequence[ReadableSpan]) -> float:
    """Total time of the ``embeddings`` spans among ``spans``."""
    return sum(
        span_ms(s) for s in spans if (s.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == "embeddings"
    )


def union_ms(intervals: Sequence[tuple[int, int]]) -> float:
    """Length of the union of ``(start, end)`` nanosecond intervals, in ms."""
    total, reach = 0, 0
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total / 1e6


def sample_from_spans(wall_ms: float, spans: Sequence[ReadableSpan], injected: int) -> TurnSample:
    """One turn's sample from its wall time and the spans it produced."""
    node_of: dict[int, str] = {}
    nodes: dict[str, float] = {}
    chat_ms = 0.0
    for span in spans:
        if span.name.startswith(sc.NODE_SPAN_PREFIX) and span.context is not None:
            name = span.name.removeprefix(sc.NODE_SPAN_PREFIX)
            node_of[span.context.span_id] = name
            nodes[name] = nodes.get(name, 0.0) + span_ms(span)
        elif (span.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == "chat":
            chat_ms += span_ms(span)
    intervals: dict[str, list[tuple[int, int]]] = {}
    for span in spans:
        if (span.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == "embeddings":
            node = node_of.get(span.parent.span_id if span.parent else 0, "other")
            intervals.setdefault(node, []).append((span.start_time or 0, span.end_time or 0))
    return TurnSample(
        wall_ms=wall_ms,
        chat_ms=chat_ms,
        overhead_ms=wall_ms - chat_ms,
        nodes_ms=nodes,
        embed_ms={node: union_ms(spans) for node, spans in intervals.items()},
        embed_engine_ms=embedding_ms(spans),
        outside_nodes_ms=wall_ms - sum(nodes.values()),
        injected=injected,
    )


# -- tokens -------------------------------------------------------------------------------


def memory_block_of(prompt: Sequence[BaseMessage]) -> str:
    """The memory block inside the system prompt as sent (``""`` when the turn had none)."""
    for message in prompt:
        content = message.content if isinstance(message.content, str) else str(message.content)
        at = content.find(MEMORY_INTRO)
        if message.type == "system" and at >= 0:
            return content[at:]
    return ""


def history_tokens(rt: Runtime, user_id: str = USER_ID) -> int:
    """Tokens of every stored message of the user and its reply: a full-context prompt's history."""
    _, count = token_counter()
    query = select(t.records.c.content, t.records.c.reply).where(
        t.records.c.user_id == user_id, t.records.c.kind == "event"
    )
    total = 0
    with rt.memory.store.engine.connect() as conn:
        for content, reply in conn.execute(query):
            total += count(content or "") + (count(reply) if reply else 0)
    return total


# -- measured turns -----------------------------------------------------------------------


def bench_settings(home: Path) -> Settings:
    """The runtime's defaults, except that triggered reflections do not run inside the turns.

    A reflection triggered every 20 messages would otherwise land in some measured turns;
    its cost is a separate figure (the learning benchmark).
    """
    return Settings(home=home, learning=LearningSettings(auto_reflect=False))


def run_turns(
    rt: Runtime,
    chat_model: ScriptedChatModel,
    exporter: InMemorySpanExporter,
    plan: TurnPlan,
    run: int = 0,
    show_progress: bool = True,
) -> list[TurnSample]:
    """Warm-up then measured turns over several dialogues with advancing simulated time.

    Run ``run`` has its own messages (the same at every store size) and starts
    ``RUN_DAYS`` after the previous one, so later runs continue the user's history.
    """
    _, count = token_counter()
    seed = plan.seed + run
    rng = random.Random(seed)
    queries = query_stream(seed)
    at = HISTORY_END + timedelta(days=1 + RUN_DAYS * run)
    full_context = history_tokens(rt)
    dialogue, left = "", 0
    samples: list[TurnSample] = []
    with progress_bar(show_progress) as progress:
        task = progress.add_task("chat turns (warm-up + measured)", total=plan.warmup + plan.turns)
        for n in range(plan.warmup + plan.turns):
            if left == 0:
                dialogue, left = f"bench-{seed}-{n:04d}", rng.randint(15, 30)
                at += timedelta(hours=rng.uniform(4, 36))
            left -= 1
            at += timedelta(seconds=rng.uniform(20, 240))
            message = next(queries)
            exporter.clear()
            chat_model.prompts.clear()
            began = time.perf_counter()
            turn = rt.chat(USER_ID, message, dialogue_id=dialogue, at=at)
            wall_ms = (time.perf_counter() - began) * 1000
            full_context += count(message)
            if n >= plan.warmup:
                sample = sample_from_spans(wall_ms, exporter.get_finished_spans(), len(turn.memories))
                prompt = chat_model.prompts[0] if chat_model.prompts else []
                sample.memory_tokens = count(memory_block_of(prompt))
                sample.prompt_tokens = sum(count(str(m.content)) for m in prompt)
                sample.full_context_tokens = full_context
                samples.append(sample)
            full_context += count(turn.reply)
            progress.advance(task)
    exporter.clear()
    return samples


def measure_run(
    home: Path, embedder: Embedder, exporter: InMemorySpanExporter, plan: TurnPlan, run: int, show: bool
) -> RunResult:
    """Reopen the runtime over ``home`` (timed), run the turns, close it."""
    chat_model = ScriptedChatModel(replies=list(REPLIES))
    began = time.perf_counter()
    rt = Runtime(bench_settings(home), chat_model=chat_model, embedder=embedder)
    try:
        result = RunResult(reopen_s=time.perf_counter() - began)
        result.samples = run_turns(rt, chat_model, exporter, plan, run, show)
    finally:
        rt.close()
    return result


# -- statistics ---------------------------------------------------------------------------


def breakdown(samples: Sequence[TurnSample]) -> dict[str, dict[str, float]]:
    """Per-node statistics; generate is shown without the chat model, embeddings separately."""
    rows: dict[str, list[float]] = {}
    embed_nodes = sorted({node for s in samples for node in s.embed_ms})
    for s in samples:
        for node in NODE_NAMES:
            value = s.nodes_ms.get(node, 0.0) - (s.chat_ms if node == "generate" else 0.0)
            rows.setdefault(node, []).append(value)
        for node in embed_nodes:
            rows.setdefault(f"embedding wait in {node}", []).append(s.embed_ms.get(node, 0.0))
        rows.setdefault("embedding engine time (all spans)", []).append(s.embed_engine_ms)
        rows.setdefault("outside nodes (LangGraph, checkpoint)", []).append(s.outside_nodes_ms)
        rows.setdefault("chat model (subtracted)", []).append(s.chat_ms)
    return {name: describe(values) for name, values in rows.items()}


def run_summary(run: RunResult) -> dict[str, Any]:
    """One run's statistics (the raw samples are kept separately)."""
    s = run.samples
    return {
        "reopen_s": round(run.reopen_s, 3),
        "turns": len(s),
        "overhead_ms": describe([x.overhead_ms for x in s]),
        "wall_ms": describe([x.wall_ms for x in s]),
        "memory_tokens": describe([x.memory_tokens for x in s], 1),
    }


def across_runs(runs: Sequence[RunResult]) -> dict[str, Any]:
    """Medians of the runs' p50 and p95 and their spread (max − min across runs), and all turns pooled."""
    per_run = [describe([x.overhead_ms for x in r.samples]) for r in runs]
    out: dict[str, Any] = {}
    for key in ("p50", "p95"):
        values = [d[key] for d in per_run]
        d = describe(values)
        out[key] = d["p50"]
        out[f"{key}_spread"] = d["spread"]
        out[f"{key}_runs"] = values
    out["pooled"] = describe([x.overhead_ms for r in runs for x in r.samples])
    return out


def token_summary(samples: Sequence[TurnSample]) -> dict[str, Any]:
    """Memory-block, whole-prompt and full-context tokens per turn, and memory ÷ full context."""
    memory = describe([s.memory_tokens for s in samples], 1)
    full = describe([s.full_context_tokens for s in samples], 1)
    return {
        "memory": memory,
        "prompt": describe([s.prompt_tokens for s in samples], 1),
        "full_context": full,
        "memory_share_of_full": round(memory["p50"] / full["p50"], 6) if full.get("p50") else None,
        "injected": describe([s.injected for s in samples], 1),
    }
