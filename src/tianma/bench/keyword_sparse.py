"""An experiment for ``tianma bench keyword``: the keyword channel in Qdrant Edge sparse vectors.

A :class:`~tianma.storage.protocols.KeywordIndex` in one Edge shard, beside (not instead of) the
runtime's FTS5 index (:mod:`tianma.storage.keyword_index`), so the two can be measured on the
same data. Text goes through the same tokeniser (:func:`tianma.text.tokenize.tokenize`, jieba
for Chinese); each point is one record, tagged with its user in a tenant payload index like
:mod:`tianma.storage.edge_index`, and every read is filtered by that user. Two weightings:

* ``tf``: each token is a sparse dimension through a stable 32-bit BLAKE2b hash, its value the
  token's count in the text;
* ``bm25``: Edge's own ``Bm25`` document model over the same tokens (split on the spaces they
  are joined with, no further stopwords, English Snowball stemming like FTS5's ``porter``):
  BM25's saturated, length-normalised term weight, hashed the way a Qdrant server hashes it.

Either way the sparse vector is configured with Qdrant's ``IDF`` modifier, so a query (weight 1
per distinct token) scores ``sum(idf(t) * weight(t, doc))``: BM25 in the ``bm25`` case. The IDF
statistics cover the whole shard (``idf="all"``, as FTS5's do) or only the searched user's
points (``idf="user"``, an ``IdfParams`` corpus filter). Record ids must be UUIDs (the runtime's
are); they are the point ids.
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import qdrant_edge as qe

from tianma.storage.edge_index import NEVER_INDEX_KB, USER_FIELD, _map_errors, open_shard
from tianma.text.tokenize import tokenize

VECTOR = "keywords"
Weighting = Literal["tf", "bm25"]
IdfScope = Literal["all", "user"]
BM25_K1 = 1.2
BM25_B = 0.75
BM25_AVG_LEN = 14.0
"""Tokens of an average indexed text (LoCoMo turns: 14.5 after stopwords); Edge's ``Bm25``
model normalises lengths by a fixed average, where FTS5 uses the table's running one."""
_BATCH = 1024
_PAGE = 1024


def token_index(token: str) -> int:
    """The sparse dimension of a token: a stable 32-bit hash (the same in every process)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "big")


def _owner(user_id: str) -> qe.FieldCondition:
    return qe.FieldCondition(key=USER_FIELD, match=qe.MatchValue(user_id))


class SparseKeywordIndex:
    """Keyword search in a Qdrant Edge shard of sparse vectors at ``path`` (see the module)."""

    def __init__(self, path: Path, *, weighting: Weighting = "tf", idf: IdfScope = "all") -> None:
        self._path = path
        self._weighting: Weighting = weighting
        self._idf: IdfScope = idf
        self._model = (
            qe.Bm25(
                qe.Bm25Config(
                    k=BM25_K1, b=BM25_B, avg_len=BM25_AVG_LEN, tokenizer=qe.TokenizerType.Whitespace,
                    stopwords=qe.StopwordsSet(), stemmer=qe.SnowballParams(qe.SnowballLanguage.English),
                )
            )
            if weighting == "bm25"
            else None
        )  # fmt: skip
        self._shard = self._open()
        self._closed = False

    def _config(self) -> qe.EdgeConfig:
        return qe.EdgeConfig(
            sparse_vectors={VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            max_search_threads=1,
            optimizers=qe.EdgeOptimizersConfig(
                deleted_threshold=0.0, vacuum_min_vector_number=1, indexing_threshold=NEVER_INDEX_KB
            ),
        )

    def _open(self) -> qe.EdgeShard:
        return open_shard(self._path, self._config())

    def document(self, text: str) -> qe.SparseVector:
        """The sparse vector stored for ``text``."""
        tokens = tokenize(text)
        if self._model is not None:
            return self._model.embed_document(" ".join(tokens))
        counts = Counter(token_index(t) for t in tokens)
        indices = sorted(counts)
        return qe.SparseVector(indices, [float(counts[i]) for i in indices])

    def query_vector(self, query_tokens: Sequence[str]) -> qe.SparseVector:
        """The sparse vector of a query: weight 1 for each distinct token (IDF is Edge's)."""
        if self._model is not None:
            return self._model.embed_query(" ".join(query_tokens))
        indices = sorted({token_index(t) for t in query_tokens})
        return qe.SparseVector(indices, [1.0] * len(indices))

    def upsert(self, user_id: str, items: Iterable[tuple[str, str]]) -> None:
        """Index ``(record_id, text)`` pairs of one user, replacing earlier entries."""
        payload = {USER_FIELD: user_id}
        points = [qe.Point(uuid.UUID(rid), {VECTOR: self.document(body)}, payload) for rid, body in items]
        with _map_errors(self._path):
            for start in range(0, len(points), _BATCH):
                self._shard.update(qe.UpdateOperation.upsert_points(points[start : start + _BATCH]))

    def delete(self, record_ids: Sequence[str]) -> None:
        """Remove records from the index, whoever owns them."""
        if not record_ids:
            return
        with _map_errors(self._path):
            self._shard.update(qe.UpdateOperation.delete_points([uuid.UUID(r) for r in record_ids]))

    def drop_user(self, user_id: str) -> None:
        """Remove every entry of one user."""
        with _map_errors(self._path):
            self._shard.update(qe.UpdateOperation.delete_points_by_filter(qe.Filter(must=[_owner(user_id)])))

    def optimize(self) -> None:
        """Vacuum deleted points out of the segments (Edge only marks them deleted)."""
        with _map_errors(self._path):
            self._shard.optimize()
            self._shard.flush()

    def clear(self) -> None:
        """Start again from an empty shard."""
        with _map_errors(self._path):
            self._shard.close()
            shutil.rmtree(self._path)
            self._shard = self._open()

    def ids(self, user_id: str) -> set[str]:
        """The record ids of one user's entries."""
        found: set[str] = set()
        offset = None
        with _map_errors(self._path):
            while True:
                request = qe.ScrollRequest(
                    offset=offset, limit=_PAGE, filter=qe.Filter(must=[_owner(user_id)]), with_payload=False
                )
                records, offset = self._shard.scroll(request)
                found.update(str(r.id) for r in records)
                if offset is None:
                    return found

    def count(self, user_id: str) -> int:
        """Entries of one user."""
        with _map_errors(self._path):
            return int(
                self._shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=[_owner(user_id)])))
            )

    def search(
        self, user_id: str, query_tokens: Sequence[str], limit: int, *, others: bool = False
    ) -> list[tuple[str, float]]:
        """``(record_id, score)`` of the user's best keyword matches, best first (score > 0).

        ``others=True`` searches every user *except* ``user_id`` (the cross-user leak check).
        """
        vector = self.query_vector(query_tokens)
        if not vector.indices:
            return []
        scope = qe.Filter(must_not=[_owner(user_id)]) if others else qe.Filter(must=[_owner(user_id)])
        params = qe.SearchParams(idf=qe.IdfParams(corpus=scope)) if self._idf == "user" else None
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector, using=VECTOR),
            filter=scope,
            params=params,
            with_payload=False,
        )
        with _map_errors(self._path):
            points = self._shard.query(request)
        return [(str(p.id), float(p.score)) for p in points if p.score > 0]

    def flush(self) -> None:
        """Write what the write-ahead log holds into the segments."""
        with _map_errors(self._path):
            self._shard.flush()

    def close(self) -> None:
        """Flush and release the shard."""
        with _map_errors(self._path):
            if not self._closed:
                self._closed = True
                self._shard.flush()
                self._shard.close()
