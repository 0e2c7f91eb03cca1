"""Filter-then-hybrid search: dense + keyword channels, exact fact lookup, fused relevance.

The user filter is structural (one collection / owner token per user); status is filtered by
what is indexed (only active records). Relevance is calibrated per query: e5 similarities are
compressed (unrelated Chinese pairs score ~0.85), so a dense hit counts by how far it beats the
query's similarity to a few neutral anchor sentences rather than by its raw cosine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from tianma.memory import associations, shipped_vectors
from tianma.memory.per_embedder import PerEmbedder
from tianma.memory.service import Memory, index_text, is_indexed
from tianma.memory.subject_model import SUBJECT, Trained, subject_embedder
from tianma.memory.subjects import SubjectLabels
from tianma.policies.diversity import mmr
from tianma.policies.scoring import RerankPolicy, rerank
from tianma.storage.protocols import Embedder, Matrix, Vector
from tianma.storage.records import Candidate, MemoryRecord, ScoredMemory
from tianma.text.tokenize import token_set, tokenize

NEUTRAL_ANCHORS = (
    "随便聊聊",
    "好的，谢谢",
    "这是一段文字",
    "嗯嗯",
    "Okay, thanks",
    "This is a sentence.",
    "Let us talk about something",
    "Hello there",
)
"""Sentences about nothing in particular: a query's similarity to them is its noise floor."""

DENSE_WEIGHT = 0.5
KEYWORD_WEIGHT = 0.5
"""Equal weights: on LoCoMo conv-26 (dev) dense-only R@5 32.0, BM25-only 51.9, both 57.3."""
BM25_SHARE = 0.5
"""Keyword relevance = this share of the BM25 score (normalised by the query's best) plus the
rest as the share of query words covered. BM25 knows which words are rare; coverage does not
let one rare word outweigh the rest of the question. On conv-26: coverage alone 53.1, BM25
alone 55.6, half each 57.3 (R@5)."""
DENSE_SPAN = 0.35
"""A margin over the noise floor of this much (normalised units) gives 63 % of full relevance."""
REPLY_SHARE = 0.85
"""The reply right after a relevant message (someone else speaking next in the same dialogue)
inherits this share of its relevance.

In a conversation the answer follows the question ("How long have you been married?" → "5 years
already!"), and the words of a question rarely repeat in its answer. On LoCoMo conv-26 (dev)
R@5 57.3 → 66.0 (0.7: 62.6, 0.95: 67.5 but 1.0 falls to 64.8; 0.85 is in the flat part)."""
REPLY_FROM_TOP = 10
"""Only the best this-many candidates pass relevance on (one indexed lookup each)."""
FACT_RELEVANCE = 0.9
"""Relevance of a structured fact whose key matches the query."""


_NEUTRAL: PerEmbedder[Matrix] = PerEmbedder(lambda embedder: embedder.embed_passages(list(NEUTRAL_ANCHORS)))
_SUBJECTS: PerEmbedder[SubjectLabels] = PerEmbedder(
    lambda embedder: SubjectLabels.build(embedder, shipped_vectors.vectors(embedder, "statement_background"))
)


@dataclass(frozen=True, eq=False)
class AnchorCache:
    """The fixed vectors a search compares with, computed once per embedder and process
    (:mod:`tianma.memory.per_embedder`): every runtime of a process shares them."""

    embedder: Embedder

    def floor(self, vector: Vector) -> float:
        """The query's similarity to the nearest of :data:`NEUTRAL_ANCHORS`."""
        return float(np.max(_NEUTRAL.get(self.embedder) @ vector))

    def statement_background(self) -> Matrix:
        """Embeddings of ordinary statements about oneself (``data/statement_background.txt``):
        the centre that statement comparisons subtract."""
        return shipped_vectors.vectors(self.embedder, "statement_background")

    def statement_background_queries(self, model: Trained = SUBJECT) -> Matrix:
        """The same statements embedded as queries: the centre of the subject comparison that
        closes statements (:mod:`tianma.memory.subject_vectors`), by the subject model ``model``
        (:mod:`tianma.memory.subject_model`)."""
        return shipped_vectors.vectors(subject_embedder(self.embedder, model), "statement_background_queries")

    def statement_subjects(self) -> SubjectLabels:
        """The subject labels statements are projected on (:mod:`tianma.memory.subjects`)."""
        return _SUBJECTS.get(self.embedder)


def dense_relevance(similarity: float, floor: float) -> float:
    """How far ``similarity`` beats the noise floor, in [0, 1): saturating but never tied."""
    margin = (similarity - floor) / max(1e-6, 1.0 - floor)
    return float(1.0 - math.exp(-margin / DENSE_SPAN)) if margin > 0 else 0.0


def keyword_coverage(query_tokens: frozenset[str], record: MemoryRecord) -> float:
    """Share of the query's distinct tokens that the record contains."""
    if not query_tokens:
        return 0.0
    return len(query_tokens & token_set(index_text(record))) / len(query_tokens)


def fact_matches(query_tokens: frozenset[str], record: MemoryRecord) -> bool:
    """A structured fact matches when a segment of its key is a query token."""
    if record.key is None:
        return False
    segments = {s for s in record.key.lower().replace("_", ".").split(".") if s}
    return bool(segments & query_tokens)


HYBRID: frozenset[str] = frozenset({"dense", "keyword"})
"""Both channels (the runtime's retrieval); ``{"dense"}`` or ``{"keyword"}`` alone are the
baselines an experiment compares it with (``retrieval.channels``, ``retrieve_dense``, ``retrieve_keyword``)."""
CHANNELS: dict[str, frozenset[str]] = {"hybrid": HYBRID, "dense": frozenset({"dense"}), "keyword": frozenset({"keyword"})}
"""``retrieval.channels`` → the channels :func:`hybrid_search` uses."""


def hybrid_search(
    memory: Memory,
    anchors: AnchorCache,
    user_id: str,
    query_text: str,
    query_vector: Vector,
    limit: int,
    graph: bool = False,
    channels: frozenset[str] = HYBRID,
) -> list[Candidate]:
    """Candidates from the dense and keyword channels and the fact table, best first; with
    ``graph``, the association graph's walk from the best of them adds the records it reaches
    and lifts those it reaches again (:mod:`tianma.memory.associations`). ``channels``: one
    channel alone carries the whole relevance (the fact table goes with the keyword channel)."""
    use_dense, use_keyword = "dense" in channels, "keyword" in channels
    dense_weight = DENSE_WEIGHT if use_keyword else 1.0
    keyword_weight = KEYWORD_WEIGHT if use_dense else 1.0
    dense = dict(memory.vectors.search(user_id, query_vector, limit)) if use_dense else {}
    q_tokens = tokenize(query_text)
    keyword = dict(memory.keywords.search(user_id, q_tokens, limit)) if use_keyword else {}
    best_bm25 = max(keyword.values(), default=0.0)
    facts = [f for f in memory.store.facts_with_keys(user_id) if fact_matches(frozenset(q_tokens), f)] if use_keyword else []
    if use_dense:
        _fill_dense(memory, user_id, query_vector, dense, keyword)
    records = memory.store.get_many(user_id, [*dense, *keyword, *(f.id for f in facts)])
    floor = anchors.floor(query_vector)
    fact_ids = {f.id for f in facts}
    q_set = frozenset(q_tokens)

    def candidate(rid: str, record: MemoryRecord, lift: float = 0.0, reached: bool = False) -> Candidate:
        hits = {"dense": rid in dense and not reached, "keyword": rid in keyword, "fact": rid in fact_ids,
                "graph": lift > 0}  # fmt: skip
        channels = tuple(name for name, hit in hits.items() if hit)
        relevance = dense_weight * dense_relevance(dense.get(rid, 0.0), floor) if use_dense else 0.0
        if use_keyword:
            bm25 = keyword.get(rid, 0.0) / best_bm25 if best_bm25 > 0 else 0.0
            relevance += keyword_weight * (BM25_SHARE * bm25 + (1 - BM25_SHARE) * keyword_coverage(q_set, record))
        if rid in fact_ids:
            relevance = max(relevance, FACT_RELEVANCE)
        return Candidate(record=record, relevance=min(1.0, relevance + lift), channels=channels)

    out = [candidate(rid, record) for rid, record in records.items() if is_indexed(record)]
    out.sort(key=lambda c: c.relevance, reverse=True)
    if graph and out:
        lifts = associations.lifts(associations.walk(memory.tags, user_id, out))
        fresh = [rid for rid in lifts if rid not in records]
        if use_dense:
            _fill_dense(memory, user_id, query_vector, dense, fresh)
        walked_to = memory.store.get_many(user_id, fresh)
        out = [candidate(c.record.id, c.record, lifts[c.record.id]) if c.record.id in lifts else c for c in out]
        out += [candidate(rid, r, lifts[rid], reached=True) for rid, r in walked_to.items() if is_indexed(r)]
        out.sort(key=lambda c: c.relevance, reverse=True)
    return with_replies(memory, user_id, out)


def _fill_dense(
    memory: Memory, user_id: str, query_vector: Vector, dense: dict[str, float], ids: Iterable[str]
) -> None:
    """The query's similarity to records another channel found (the dense channel's top missed)."""
    missing = [rid for rid in ids if rid not in dense]
    if missing:
        for rid, vec in memory.vectors.get_vectors(user_id, missing).items():
            dense[rid] = float(vec @ query_vector)


def answers(first: MemoryRecord, after: MemoryRecord) -> bool:
    """``after`` is someone else speaking (a chat turn's event already holds its own reply)."""
    return (after.role, after.speaker) != (first.role, first.speaker)


def with_replies(memory: Memory, user_id: str, ranked: list[Candidate]) -> list[Candidate]:
    """Add (or lift) the next message after each top event: :data:`REPLY_SHARE` of its relevance."""
    top = [c.record for c in ranked[:REPLY_FROM_TOP] if c.record.kind == "event"]
    if not top:
        return ranked
    nexts = memory.store.next_events(user_id, top)
    if not nexts:
        return ranked
    by_id = {c.record.id: c for c in ranked}
    for c in ranked[:REPLY_FROM_TOP]:
        after = nexts.get(c.record.id)
        if after is None or not is_indexed(after) or not answers(c.record, after):
            continue
        inherited = REPLY_SHARE * c.relevance
        known = by_id.get(after.id)
        if known is None or known.relevance < inherited:
            channels = ("reply",) if known is None else (*known.channels, "reply")
            by_id[after.id] = Candidate(record=after, relevance=inherited, channels=channels)
    return sorted(by_id.values(), key=lambda c: c.relevance, reverse=True)


def rank_memories(
    memory: Memory, user_id: str, candidates: Sequence[Candidate], at: datetime, policy: RerankPolicy, keep: int,
    diversity: float = 0.0,
) -> list[ScoredMemory]:  # fmt: skip
    """The ``keep`` best candidates by the rerank score, or — with ``diversity`` — picked by
    maximal marginal relevance over their vectors (:mod:`tianma.policies.diversity`)."""
    if diversity <= 0:
        return rerank(candidates, at, policy, limit=keep)
    scored = rerank(candidates, at, policy, limit=len(candidates))
    vectors = memory.vectors.get_vectors(user_id, [m.id for m in scored]) if scored else {}
    return mmr(scored, vectors, keep, diversity)
