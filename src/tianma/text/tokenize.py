"""Keyword tokens for Chinese and English text (jieba for CJK, lower-cased words otherwise)."""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jieba

_WORD = re.compile(r"\w", re.UNICODE)
_lock = threading.Lock()
_tokenizer: jieba.Tokenizer | None = None

STOPWORDS = frozenset(
    """
    的 了 是 我 你 他 她 它 们 我们 你们 在 有 和 就 不 也 都 而 及 与 着 或 一个 没有 吗 呢 吧 啊 呀 哦 嗯 这 那 这个 那个 什么 怎么 怎么样 为什么
    哪 哪个 谁 给 把 被 让 请 帮 帮我 一下 一点 还 又 很 会 能 要 想 可以 应该 对 从 到 上 下 里 中 吗 么 之 其 以 及其 还是 但是 因为 所以 如果 那么
    这样 a an the and or but if then of to in on at by for with from as is are was were be been
    being am do does did doing have has had having i me my mine you your yours he him his she
    her hers it its we us our they them their what which who whom this that these those there
    here how why when where can could would should will shall may might must not no yes so than
    too very just about into over under again further once all any both each few more most other
    some such only own same s t don now up down out off
    """.split()  # noqa: SIM905
)
"""Function words that carry no topic; kept short on purpose (BM25 discounts the rest)."""


def _get_tokenizer() -> jieba.Tokenizer:
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            tok = jieba.Tokenizer()
            tok.initialize()
            _tokenizer = tok
        return _tokenizer


@lru_cache(maxsize=4096)
def tokenize(text: str) -> tuple[str, ...]:
    """Search tokens of ``text``: jieba's search-mode cut, lower-cased, stopwords dropped.

    Search mode also emits the sub-words of long words (``中华人民共和国`` → ``中华``, ``人民`` …),
    which is what recall needs.
    """
    tokens = []
    for raw in _get_tokenizer().cut_for_search(text):
        tok = raw.strip().lower()
        if tok and _WORD.search(tok) and tok not in STOPWORDS:
            tokens.append(tok)
    return tuple(tokens)


def token_set(text: str) -> frozenset[str]:
    """Distinct tokens of ``text``."""
    return frozenset(tokenize(text))


_NOUN_FLAGS = ("n", "nr", "ns", "nt", "nz", "vn", "eng")
_NOT_TOPICS = frozenset(
    [
        "while",
        "about",
        "would",
        "could",
        "should",
        "there",
        "their",
        "these",
        "those",
        "really",
        "maybe",
        "today",
        "tomorrow",
        "yesterday",
        "thanks",
        "thank",
        "please",
        "actually",
        "still",
        "again",
        "always",
        "never",
        "something",
        "anything",
        "everything",
        "nothing",
        "someone",
        "anyone",
        "everyone",
        "without",
        "within",
        "before",
        "after",
        "because",
        "since",
        "until",
        "also",
        "just",
        "very",
        "much",
        "many",
        "some",
        "more",
        "most",
        "other",
        "another",
        "same",
        "sure",
        "okay",
        "good",
        "great",
        "right",
        "well",
        "know",
        "think",
        "want",
        "need",
        "like",
        "make",
        "take",
        "give",
        "tell",
        "said",
        "says",
        "going",
        "doing",
        "being",
        "have",
        "been",
        "were",
    ]
)
"""English words jieba tags ``eng`` that are never a topic."""
_pos_tokenizer: Any = None


def nouns(text: str) -> tuple[str, ...]:
    """Content nouns of ``text`` (jieba part-of-speech tags; English words of 4+ letters)."""
    global _pos_tokenizer
    if _pos_tokenizer is None:
        from jieba.posseg import POSTokenizer

        _pos_tokenizer = POSTokenizer(_get_tokenizer())
    out = []
    for pair in _pos_tokenizer.cut(text):
        word, flag = pair.word.strip().lower(), pair.flag
        if (
            flag.startswith(_NOUN_FLAGS)
            and word not in STOPWORDS
            and word not in _NOT_TOPICS
            and len(word) >= (4 if flag == "eng" else 2)
        ):
            out.append(word)
    return tuple(out)
