"""Keyword channel in process memory: BM25 over :func:`tianma.text.tokenize.tokenize` tokens.

A stand-in for :class:`tianma.storage.keyword_index.SqliteKeywordIndex` (tests, throwaway
runs) with the same contract. It scores like FTS5's ``bm25()``, with statistics over every
user's entries as in the one shared FTS5 table, so simple cases rank the same; the scores
themselves differ (see :class:`InMemoryKeywordIndex`).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tianma.text.tokenize import tokenize

K1 = 1.2
"""BM25 term-frequency saturation (FTS5's default)."""
B = 0.75
"""BM25 length normalisation (FTS5's default)."""
_MIN_IDF = 1e-6
"""FTS5's floor for the IDF of a term in half the entries or more, so every match scores > 0."""


@dataclass(frozen=True, slots=True)
class _Entry:
    user_id: str
    freqs: Counter[str]
    length: int


class InMemoryKeywordIndex:
    """BM25 keyword search in plain dicts, guarded by one lock.

    ``score = Σ idf(t) · f·(K1+1) / (f + K1·(1 − B + B·len/avglen))`` over the distinct query
    tokens ``t`` in the entry, ``f`` their counts in it, ``idf = ln((N − n + ½) / (n + ½))``
    (floored at 1e-6 as in FTS5), ``N`` every user's entries, ``n`` those containing ``t``.

    Differences from SQLite: tokens are :func:`tokenize`'s, compared after lower-casing only.
    FTS5 additionally applies its ``porter`` stemmer (``running`` matches ``runs`` there, not
    here), folds diacritics and re-splits tokens on punctuation (``c++``, ``3.14``); and its
    entry length also counts the owner token. :meth:`optimize` is a no-op (nothing lingers).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._postings: dict[str, set[str]] = {}
        self._by_user: dict[str, set[str]] = {}
        self._total_length = 0

    def upsert(self, user_id: str, items: Iterable[tuple[str, str]]) -> None:
        """Index ``(record_id, text)`` pairs of one user, replacing earlier entries."""
        entries = [(rid, Counter(tokenize(body))) for rid, body in items]
        with self._lock:
            for rid, freqs in entries:
                self._remove(rid)
                entry = _Entry(user_id, freqs, sum(freqs.values()))
                self._entries[rid] = entry
                self._by_user.setdefault(user_id, set()).add(rid)
                self._total_length += entry.length
                for token in freqs:
                    self._postings.setdefault(token, set()).add(rid)

    def delete(self, record_ids: Sequence[str]) -> None:
        """Remove records from the index."""
        with self._lock:
            for rid in record_ids:
                self._remove(rid)

    def drop_user(self, user_id: str) -> None:
        """Remove every entry of one user."""
        with self._lock:
            for rid in list(self._by_user.get(user_id, ())):
                self._remove(rid)

    def optimize(self) -> None:
        """Nothing to merge: a removed entry's tokens are gone at once."""

    def clear(self) -> None:
        """Remove everything (before a rebuild)."""
        with self._lock:
            self._entries.clear()
            self._postings.clear()
            self._by_user.clear()
            self._total_length = 0

    def ids(self, user_id: str) -> set[str]:
        """The record ids of one user's entries."""
        with self._lock:
            return set(self._by_user.get(user_id, ()))

    def count(self, user_id: str) -> int:
        """Entries of one user."""
        with self._lock:
            return len(self._by_user.get(user_id, ()))

    def search(
        self, user_id: str, query_tokens: Sequence[str], limit: int, *, others: bool = False
    ) -> list[tuple[str, float]]:
        """``(record_id, bm25)`` of the user's best keyword matches, best first (bm25 > 0).

        ``others=True`` searches every user *except* ``user_id`` (the cross-user leak check).
        """
        terms = sorted({t.lower() for t in query_tokens})
        if not terms or limit <= 0:
            return []
        with self._lock:
            total = len(self._entries)
            if not total:
                return []
            avg_length = self._total_length / total
            scores: dict[str, float] = {}
            for term in terms:
                posting = self._postings.get(term)
                if not posting:
                    continue
                idf = math.log((total - len(posting) + 0.5) / (len(posting) + 0.5))
                idf = idf if idf > 0 else _MIN_IDF
                for rid in posting:
                    entry = self._entries[rid]
                    if (entry.user_id == user_id) == others:
                        continue
                    f = entry.freqs[term]
                    norm = K1 * (1 - B + B * entry.length / avg_length)
                    scores[rid] = scores.get(rid, 0.0) + idf * f * (K1 + 1) / (f + norm)
        ranked = sorted(scores.items(), key=lambda hit: (-hit[1], hit[0]))
        return ranked[:limit]

    def _remove(self, rid: str) -> None:
        """Drop one entry (the lock is held)."""
        entry = self._entries.pop(rid, None)
        if entry is None:
            return
        owned = self._by_user[entry.user_id]
        owned.discard(rid)
        if not owned:
            del self._by_user[entry.user_id]
        self._total_length -= entry.length
        for token in entry.freqs:
            posting = self._postings[token]
            posting.discard(rid)
            if not posting:
                del self._postings[token]
