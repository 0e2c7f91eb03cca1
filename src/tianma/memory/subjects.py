"""What everyday subject a statement is about, by nearness to a shipped list of subject labels.

Raw e5 similarity between two statements mixes their subject with everything else they share
(“I prefer …”, a complaint's tone, the same city). Projecting each statement on a list of
subjects (``data/statement_subjects.txt``: answer length, units, travel transport, spicy food,
podcasts, … about eighty, in English and Chinese) gives a coarse label that two phrasings of the
same wish usually share even when no word and little else does (“Fahrenheit and miles, always” ·
“Switch me over to Celsius and kilometers”). Each label's mean score over the background of
ordinary statements is taken off first, so broad labels do not attract everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tianma.memory import shipped_vectors
from tianma.storage.protocols import Embedder, Matrix

TOP = 2
"""Two statements share a subject when each one's best label is among the other's best two."""


@dataclass(frozen=True, slots=True)
class SubjectLabels:
    """Embedded subject labels and the background score taken off each."""

    labels: tuple[str, ...]
    vectors: Matrix
    offset: np.ndarray

    @classmethod
    def build(cls, embedder: Embedder, background: Matrix) -> SubjectLabels:
        """The shipped labels with their vectors (:mod:`tianma.memory.shipped_vectors`)."""
        vectors = shipped_vectors.vectors(embedder, "statement_subjects")
        return cls(shipped_vectors.lines("statement_subjects"), vectors, (background @ vectors.T).mean(axis=0))

    def best(self, vectors: Matrix) -> np.ndarray:
        """Indices of each row's :data:`TOP` nearest labels, best first (shape ``(n, TOP)``)."""
        scores = np.asarray(vectors, dtype=np.float32) @ self.vectors.T - self.offset
        return np.argsort(-scores, axis=1)[:, :TOP]


    def shared(self, vector: np.ndarray, others: Sequence[np.ndarray]) -> list[bool]:
        """For each of ``others``: does it name the same subject as ``vector`` (:func:`same_subject`)?"""
        tops = self.best(np.vstack([*others, vector]))
        return [same_subject(tops[-1], top) for top in tops[:-1]]


def same_subject(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two rows of :meth:`SubjectLabels.best` name the same subject (mutual top two)."""
    return bool(a[0] in b and b[0] in a)
