"""LoCoMo retrieval: every system ingests each conversation as one user and answers its questions.

PROTOCOL.md §1: one isolated user per conversation, turns in order with their session dates,
speaker A on the user side; the clock frozen at the last session + 1 day; the question alone is
the query; a hit maps to the turns it came from. Scores per category, over categories 1–4 and
over all five, separately for the dev conversation (conv-26, the only one tuned on) and the
nine test conversations.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.progress import Progress
from rich.table import Table

from tianma.bench.common import describe, token_counter
from tianma.bench.locomo_data import CATEGORIES, DEV_CONVERSATION, Conversation
from tianma.bench.recall import mean_rows, metric_keys, score_question
from tianma.bench.systems import System

SystemFactory = Callable[[dict[str, Conversation]], System]
"""Builds a fresh system; gets the conversations by user id (tianma needs their clocks)."""

ANCHORS = {
    "DRAGON (LoCoMo paper, Table 3, dialog, all 10 conversations)": {"R@5": 0.567, "R@10": 0.662},
    "BM25 over turns (PROTOCOL.md, all 10 conversations)": {"R@5": 0.519, "R@10": 0.588},
}
TARGET_R5_TEST = 0.70


def split_of(sample_id: str) -> str:
    return "dev" if sample_id == DEV_CONVERSATION else "test"


def run_system(
    factory: SystemFactory,
    conversations: Sequence[Conversation],
    progress: Progress | None = None,
) -> tuple[str, list[dict[str, Any]], dict[str, float]]:
    """One system over every conversation: its name, per-question rows, and ingest seconds."""
    by_user = {c.sample_id: c for c in conversations}
    system = factory(by_user)
    _, count = token_counter()
    rows: list[dict[str, Any]] = []
    timing = {"ingest_s": 0.0}
    total = sum(len(c.questions) for c in conversations)
    task = progress.add_task(f"LoCoMo · {system.name}", total=total) if progress else None
    try:
        for conv in conversations:
            started = time.perf_counter()
            system.add(conv.sample_id, conv.docs)
            timing["ingest_s"] += time.perf_counter() - started
            for i, q in enumerate(conv.questions):
                t0 = time.perf_counter()
                hits = system.search(conv.sample_id, q.text, 10)
                latency = (time.perf_counter() - t0) * 1000
                row: dict[str, Any] = {
                    "conversation": conv.sample_id,
                    "split": split_of(conv.sample_id),
                    "question": i,
                    "category": q.category,
                    "latency_ms": latency,
                }
                row.update(score_question(q.evidence, hits, conv.session_of, count))
                rows.append(row)
                if progress is not None and task is not None:
                    progress.advance(task)
    finally:
        system.close()
    return system.name, rows, timing


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per split (dev, test, all): overall (1–5), categories 1–4, and each category."""
    keys = metric_keys()
    out: dict[str, Any] = {}
    for split in ("dev", "test", "all"):
        chosen = [r for r in rows if split == "all" or r["split"] == split]
        if not chosen:
            continue
        part: dict[str, Any] = {
            "overall": mean_rows(chosen, keys),
            "categories_1_4": mean_rows((r for r in chosen if r["category"] != 5), keys),
            "by_category": {
                CATEGORIES[c]: mean_rows((r for r in chosen if r["category"] == c), keys) for c in CATEGORIES
            },
            "latency_ms": describe([r["latency_ms"] for r in chosen]),
        }
        out[split] = part
    return out


def run_locomo(
    factories: Sequence[SystemFactory],
    conversations: Sequence[Conversation],
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every system over the same conversations; summaries, ratios to tianma, per-question rows."""
    systems: dict[str, Any] = {}
    for factory in factories:
        name, rows, timing = run_system(factory, conversations, progress)
        systems[name] = {"summary": summarise(rows), "timing": timing, "rows": rows}
    return {
        "conversations": [c.sample_id for c in conversations],
        "questions": sum(len(c.questions) for c in conversations),
        "skipped_questions": sum(c.skipped_questions for c in conversations),
        "systems": systems,
        "anchors": ANCHORS,
        "target": {"R@5 (test, all categories)": TARGET_R5_TEST},
    }


def headline(result: dict[str, Any], split: str) -> Table:
    """The table a terminal shows: each system's overall numbers on one split, and its ratio."""
    table = Table(title=f"LoCoMo retrieval — {split} ({_split_label(split)})")
    for col in (
        "system",
        "n",
        "R@5",
        "R@10",
        "any@5",
        "all@5",
        "sessR@5",
        "cat 1–4 R@5",
        "turns@5",
        "tokens@5",
        "p50 ms",
        "R@5 ÷ tianma",
    ):
        table.add_column(col, justify="left" if col == "system" else "right")
    base = result["systems"].get("tianma", {}).get("summary", {}).get(split, {}).get("overall", {}).get("R@5")
    for name, sysres in result["systems"].items():
        part = sysres["summary"].get(split)
        if part is None:
            continue
        o, c = part["overall"], part["categories_1_4"]
        ratio = f"{o['R@5'] / base:.2f}" if base else "—"
        table.add_row(
            name, str(o["n"]), *(f"{o[k]:.3f}" for k in ("R@5", "R@10", "any@5", "all@5", "sessR@5")),
            f"{c.get('R@5', 0):.3f}", f"{o['turns']:.1f}", f"{o['tokens']:.0f}",
            f"{part['latency_ms'].get('p50', 0):.1f}", ratio,
        )  # fmt: skip
    return table


def _split_label(split: str) -> str:
    return {"dev": "conv-26, tuned on", "test": "nine held-out conversations", "all": "all ten"}[split]
