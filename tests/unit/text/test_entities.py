"""What a text's tags are: the people, places, things and amounts it is about."""

from __future__ import annotations

from tianma.text.entities import MAX_TAGS, tags


def test_english_names_places_things_and_numbers() -> None:
    found = tags("Tim and Caroline moved from Sweden to Ohio in 2019; the apartment cost 1,450 a month.")
    assert {"tim", "caroline", "sweden", "ohio", "2019", "1450", "apartment"} <= set(found)
    assert not {"and", "the", "from", "in", "a"} & set(found)


def test_chinese_nouns_and_names() -> None:
    found = tags("我和王小明上周去杭州看了西湖，门票八十块，我们拍了很多照片。")
    assert {"杭州", "西湖", "门票", "照片"} <= set(found)
    assert not {"我", "我们", "了"} & set(found)


def test_distinct_in_order_and_bounded() -> None:
    assert tags("Paris, Paris and Rome. Paris again.") == ("paris", "rome")
    long = " ".join(f"Word{i}city" for i in range(100))
    assert len(tags(long)) == MAX_TAGS
    assert tags("") == () and tags("好的，谢谢！") == ()


def test_sentence_start_words_are_not_names() -> None:
    assert not {"the", "but", "yes", "hey", "wow"} & set(tags("The end. But yes. Hey! Wow."))
