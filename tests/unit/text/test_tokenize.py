from __future__ import annotations

from tianma.text.tokenize import tokenize


def test_chinese_is_segmented_into_words_not_split_on_whitespace() -> None:
    tokens = tokenize("以后周末别给我安排提醒")
    assert {"周末", "安排", "提醒"} <= set(tokens)
    assert "以后周末别给我安排提醒" not in tokens


def test_search_mode_emits_sub_words() -> None:
    assert {"软件", "工程师"} <= set(tokenize("我是软件工程师"))


def test_stopwords_and_punctuation_are_dropped_and_english_lowercased() -> None:
    tokens = tokenize("我的名字是什么？ What is MY Name!")
    assert "的" not in tokens and "？" not in tokens and "is" not in tokens
    assert {"名字", "name"} <= set(tokens)
