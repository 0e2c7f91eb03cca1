"""Maximal marginal relevance: the memories that go forward say different things.

From the candidates the reranker scored, pick one at a time the one that maximises
``(1 − diversity) × score − diversity × its greatest cosine to one already picked`` (scores scaled
to the best one). ``diversity`` 0 is the score order; ``retrieval.diversity`` sets it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tianma.storage.records import ScoredMemory


def mmr(scored: Sequence[ScoredMemory], vectors: Mapping[str, np.ndarray], keep: int, diversity: float) -> list[ScoredMemory]:
    """The ``keep`` memories MMR picks (a memory without a vector competes on its score alone)."""
    if not scored:
        return []
    top = max(m.score for m in scored) or 1.0
    chosen: list[ScoredMemory] = []
    left = list(scored)
    while left and len(chosen) < keep:

        def value(m: ScoredMemory) -> float:
            v = vectors.get(m.id)
            near = max((float(v @ vectors[c.id]) for c in chosen if v is not None and c.id in vectors), default=0.0)
            return (1 - diversity) * m.score / top - diversity * near

        best = max(left, key=value)
        chosen.append(best)
        left.remove(best)
    return chosen
