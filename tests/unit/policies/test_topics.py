from __future__ import annotations

from tianma.policies.topics import recurring_topics


def test_a_topic_recurring_three_turns_apart_is_found_with_its_events() -> None:
    messages = [("e0", "我想准备马拉松"), ("e1", "今天天气怎么样"), ("e2", "推荐一本书"),
                ("e3", "马拉松前一周该吃什么"), ("e4", "好的谢谢")]  # fmt: skip
    (topic,) = recurring_topics(messages)
    assert topic.topic == "马拉松" and topic.event_ids == ("e0", "e3")


def test_close_mentions_are_one_conversation_not_a_recurrence() -> None:
    messages = [("e0", "我想准备马拉松"), ("e1", "马拉松要练多久"), ("e2", "马拉松配速多少合适")]
    assert recurring_topics(messages) == []


def test_english_topics_and_function_words() -> None:
    messages = [("a", "Help me plan my marathon training"), ("b", "What is the weather"), ("c", "ok"),
                ("d", "How long before the marathon should I taper?")]  # fmt: skip
    assert [t.topic for t in recurring_topics(messages)] == ["marathon"]
