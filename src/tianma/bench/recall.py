"""Retrieval metrics of PROTOCOL.md: R@k, any@k, all@k, session recall, size of what came back."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tianma.bench.systems import Hit

KS = (5, 10)
METRICS = ("R", "any", "all", "sessR")


def score_question(
    gold: frozenset[str],
    hits: Sequence[Hit],
    session_of: Callable[[str], str],
    count_tokens: Callable[[str], int],
    ks: Sequence[int] = KS,
) -> dict[str, float]:
    """Metrics of one question at each k, plus distinct turns and tokens of the top ``ks[0]``."""
    out: dict[str, float] = {}
    gold_sessions = {session_of(g) for g in gold}
    for k in ks:
        retrieved: set[str] = set()
        for hit in hits[:k]:
            retrieved |= hit.doc_ids
        found = len(gold & retrieved)
        out[f"R@{k}"] = found / len(gold)
        out[f"any@{k}"] = float(found > 0)
        out[f"all@{k}"] = float(found == len(gold))
        sessions = {session_of(r) for r in retrieved}
        out[f"sessR@{k}"] = len(gold_sessions & sessions) / len(gold_sessions)
    first = hits[: ks[0]]
    out["turns"] = float(len(set().union(*(h.doc_ids for h in first)))) if first else 0.0
    out["tokens"] = float(sum(count_tokens(h.text) for h in first))
    return out


def mean_rows(rows: Iterable[dict[str, Any]], keys: Sequence[str]) -> dict[str, float]:
    """Means of ``keys`` over rows (and ``n``); empty when there are no rows."""
    rows = list(rows)
    if not rows:
        return {"n": 0}
    out: dict[str, float] = {"n": len(rows)}
    for key in keys:
        out[key] = round(float(np.mean([r[key] for r in rows])), 4)
    return out


def metric_keys(ks: Sequence[int] = KS) -> list[str]:
    return [f"{m}@{k}" for k in ks for m in METRICS] + ["turns", "tokens"]
