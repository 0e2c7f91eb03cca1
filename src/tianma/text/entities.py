"""Tags of a text for the association graph: the things it is about.

People, places, objects and topics are the content nouns jieba's part-of-speech tagger finds
(:func:`tianma.text.tokenize.nouns`: Chinese nouns and names, English words of four letters or
more that are no function word), plus capitalised English names of three letters (“Tim”, “Ohio”)
and amounts and years written in digits (“2022”, “450”). Two records that share a tag are linked;
retrieval walks those links from its best hits (:mod:`tianma.memory.associations`).
"""

from __future__ import annotations

import re

from tianma.text.tokenize import STOPWORDS, nouns

MAX_TAGS = 16
"""Tags kept per record (the first ones said): a long message is about many things, but the graph
stays small and a walk from it bounded."""
_NAME = re.compile(r"(?<![\w'’])[A-Z][a-z]{2}(?![\w'’])")
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*\d(?:\.\d+)?(?![\w])")
_NOT_NAMES = frozenset(
    ["hey", "wow", "yay", "aww", "omg", "lol", "ooh", "hmm", "nah", "ugh", "yep", "sup", "bye", "thx"]
)
"""Capitalised three-letter words that begin a sentence and name nothing."""
_COURTESY = frozenset(["谢谢", "感谢", "多谢", "哈哈", "哈哈哈", "不客气", "没事", "没关系"])
"""Chinese words jieba may tag as nouns that are only politeness."""


def tags(text: str) -> tuple[str, ...]:
    """Distinct tags of ``text`` in the order they first occur, at most :data:`MAX_TAGS`."""
    found: dict[str, None] = {}
    for word in nouns(text):
        if word not in _COURTESY:
            found.setdefault(word, None)
    for match in _NAME.finditer(text):
        word = match.group().lower()
        if word not in STOPWORDS and word not in _NOT_NAMES:
            found.setdefault(word, None)
    for match in _NUMBER.finditer(text):
        found.setdefault(match.group().replace(",", ""), None)
    return tuple(found)[:MAX_TAGS]
