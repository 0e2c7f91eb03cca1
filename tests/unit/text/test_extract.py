from __future__ import annotations

import pytest

from tianma.text.extract import CONF_EXPLICIT, CONF_LIKE, Extracted, extract_statements

G = "global"

# (message, [(kind, key, polarity, scope, time_bound), ...])
POSITIVE: list[tuple[str, list[tuple[str, str, str, str, bool]]]] = [
    # Chinese: profile facts
    ("我叫李明", [("fact", "profile.name", "is", G, False)]),
    ("我的名字是王小红。", [("fact", "profile.name", "is", G, False)]),
    ("你可以叫我小明", [("fact", "profile.name", "is", G, False)]),
    ("我住在杭州", [("fact", "profile.city", "is", G, False)]),
    ("我在阿里巴巴工作", [("fact", "profile.workplace", "is", G, False)]),
    ("我是一名产品经理", [("fact", "profile.job", "is", G, False)]),
    (
        "你好，我叫李明，在杭州做软件工程师。",
        [
            ("fact", "profile.name", "is", G, False),
            ("fact", "profile.job", "is", G, False),
            ("fact", "profile.workplace", "is", G, False),
        ],
    ),
    ("我对花生过敏", [("fact", "health.allergy.peanut", "is", G, False)]),
    (
        "我对花生和芒果过敏",
        [("fact", "health.allergy.peanut", "is", G, False), ("fact", "health.allergy.芒果", "is", G, False)],
    ),
    ("我的生日是5月3日", [("fact", "profile.birthday", "is", G, False)]),
    ("我这周很忙", [("fact", "state.busy", "is", G, True)]),
    # Chinese: likes and dislikes
    ("我喜欢喝甜的", [("preference", "preference.food.sugar", "like", G, False)]),
    ("我不喜欢含糖饮料", [("preference", "preference.food.sugar", "dislike", G, False)]),
    ("我讨厌香菜", [("preference", "preference.food.cilantro", "dislike", G, False)]),
    ("我不吃辣", [("preference", "preference.food.spicy", "must_not", G, False)]),
    ("我爱吃火锅", [("preference", "preference.food.火锅", "like", G, False)]),
    ("我对摄影很感兴趣", [("preference", "preference.general.摄影", "like", G, False)]),
    (
        "最近迷上自制低糖奶茶",
        [("preference", "preference.food.milk_tea.recent", "like", "domain:food", False)],
    ),
    ("在家我不喝酒", [("preference", "preference.food.alcohol.home", "must_not", "domain:food", False)]),
    ("我今天不吃辣", [("preference", "preference.food.spicy", "must_not", G, True)]),
    # Chinese: directives
    (
        "周末别给我安排提醒",
        [("preference", "preference.schedule.weekend.reminders", "must_not", "domain:schedule", False)],
    ),
    (
        "以后晚上十点以后别打扰我",
        [("preference", "preference.schedule.evening.notifications", "must_not", "domain:schedule", False)],
    ),
    ("今天别推贵的", [("preference", "preference.recommend.expensive", "must_not", G, True)]),
    ("以后别主动提竞品", [("preference", "preference.behavior.提竞品", "must_not", G, False)]),
    ("别用表情", [("preference", "preference.answer.emoji", "must_not", G, False)]),
    ("以后用英文回答", [("preference", "preference.answer.language", "must", G, False)]),
    ("回答简短一点", [("preference", "preference.answer.length", "must", G, False)]),
    ("回答不要太长", [("preference", "preference.answer.length", "must", G, False)]),
    ("以后先说结论", [("preference", "preference.answer.structure", "must", G, False)]),
    ("上班时回答简短一点", [("preference", "preference.answer.length.work", "must", "domain:answer", False)]),
    ("记住，我周六上午要交周报", [("fact", "note.周六上午要交周报", "is", G, False)]),
    ("记住我对花生过敏", [("fact", "health.allergy.peanut", "is", G, False)]),
    (
        "我叫李明，以后周末别给我安排提醒",
        [
            ("fact", "profile.name", "is", G, False),
            ("preference", "preference.schedule.weekend.reminders", "must_not", "domain:schedule", False),
        ],
    ),
    # English
    ("My name is Alex Chen.", [("fact", "profile.name", "is", G, False)]),
    ("Call me Sam.", [("fact", "profile.name", "is", G, False)]),
    ("I live in New York.", [("fact", "profile.city", "is", G, False)]),
    ("I work as a software engineer.", [("fact", "profile.job", "is", G, False)]),
    ("I'm a data scientist.", [("fact", "profile.job", "is", G, False)]),
    (
        "I'm allergic to peanuts and shellfish.",
        [
            ("fact", "health.allergy.peanut", "is", G, False),
            ("fact", "health.allergy.seafood", "is", G, False),
        ],
    ),
    ("This week I'm busy.", [("fact", "state.busy", "is", G, True)]),
    ("I prefer short answers.", [("preference", "preference.answer.length", "like", G, False)]),
    ("Keep answers short.", [("preference", "preference.answer.length", "must", G, False)]),
    ("From now on, keep it short.", [("preference", "preference.answer.length", "must", G, False)]),
    ("Please always answer in English.", [("preference", "preference.answer.language", "must", G, False)]),
    ("Please never use emojis.", [("preference", "preference.answer.emoji", "must_not", G, False)]),
    (
        "Don't remind me on weekends.",
        [("preference", "preference.schedule.weekend.reminders", "must_not", "domain:schedule", False)],
    ),
    (
        "I love cats and I hate onions.",
        [
            ("preference", "preference.general.cat", "like", G, False),
            ("preference", "preference.general.onion", "dislike", G, False),
        ],
    ),
    ("I don't eat pork.", [("preference", "preference.food.pork", "must_not", G, False)]),
    ("I like spicy food", [("preference", "preference.food.spicy", "like", G, False)]),
    (
        "I don't drink coffee at night.",
        [("preference", "preference.food.coffee.evening", "must_not", "domain:food", False)],
    ),
    ("Remember that my birthday is on March 3.", [("fact", "profile.birthday", "is", G, False)]),
    ("Could you remember that I'm allergic to cats?", [("fact", "health.allergy.cat", "is", G, False)]),
]

NEGATIVE = [
    # questions, including negated ones
    "我喜欢什么？",
    "你还记得我叫什么名字吗？",
    "我不是说过我不吃辣吗",
    "难道我不喜欢吃辣",
    "what's my name?",
    "Don't I like coffee?",
    "我喜欢猫，对吧？",
    # hypothetical, quoted, reported, uncertain
    "如果我说我喜欢猫，你会记住吗？",
    '"I love you", she said.',
    "他说我喜欢猫",
    "I think I like jazz.",
    "我可能对花生过敏",
    # about someone else
    "他叫张三",
    "my friend likes cats",
    "我妹妹喜欢猫，也喜欢狗",
    "他们都叫我老王",
    # not statements about the user at all
    "我叫了外卖",
    "我叫车去机场",
    "叫我起床",
    "Call me later.",
    "I'd like a coffee.",
    "我爱你",
    "I like it.",
    "我喜欢这个回答",
    "我不吃亏",
    "我在家工作",
    "我是他老师",
    "我住在酒店",
    # directives that are moods or manners, not preferences
    "以后再说吧",
    "以后我会注意的",
    "别担心",
    "不用了",
    "别说了",
    "Don't worry about it.",
    "Don't forget to buy milk.",
    "Never mind.",
    "Keep it short.",
    "用英文回答",
    "记住这个",
    "I remember when we met",
    "你的回答太长了",
]


def _shape(items: list[Extracted]) -> list[tuple[str, str, str, str, bool]]:
    return [(i.kind, i.key, i.polarity, i.scope, i.time_bound) for i in items]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_extracts(text: str, expected: list[tuple[str, str, str, str, bool]]) -> None:
    items = extract_statements(text)
    assert _shape(items) == expected
    for item in items:
        assert item.evidence and item.evidence in text
        assert 0.0 < item.confidence <= 1.0 and item.content


@pytest.mark.parametrize("text", NEGATIVE)
def test_yields_nothing(text: str) -> None:
    assert extract_statements(text) == []


def test_table_sizes_meet_the_brief() -> None:
    assert len(POSITIVE) + len(NEGATIVE) >= 40 and len(NEGATIVE) >= 15


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("我叫李明，以后周末别给我安排提醒", ["用户叫李明", "周末不要安排提醒"]),
        ("我喜欢喝甜的", ["用户喜欢喝甜的"]),
        ("最近迷上自制低糖奶茶", ["用户最近迷上自制低糖奶茶"]),
        ("在家我不喝酒", ["用户在家不喝酒"]),
        ("今天别推贵的", ["今天不要推贵的"]),
        ("以后叫我小明", ["请称呼用户为小明"]),
        ("I prefer short answers.", ["Keep answers short"]),
        ("Don't remind me on weekends.", ["Don't remind the user on weekends"]),
        ("I don't drink coffee at night.", ["User doesn't drink coffee at night"]),
        ("I'm allergic to peanuts.", ["User is allergic to peanuts"]),
        ("I work as an engineer.", ["User is an engineer"]),
        (
            "Remember that I have a standup every Monday.",
            ['User asked to remember: "I have a standup every Monday"'],
        ),
    ],
)
def test_content_is_a_self_contained_sentence_in_the_users_language(text: str, content: list[str]) -> None:
    assert [i.content for i in extract_statements(text)] == content


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("我叫李明", "我的名字是李明"),
        ("我叫李明", "My name is Li Ming."),
        ("我住在杭州", "我家在上海"),
        ("我喜欢喝甜的", "我不喜欢含糖饮料"),
        ("我讨厌香菜", "I don't like cilantro."),
        ("我对花生过敏", "I'm allergic to peanuts."),
        ("回答简短一点", "Keep answers short."),
        ("回答简短一点", "回答详细一些"),
        ("I prefer short answers.", "以后短一点"),
        ("周末别给我安排提醒", "以后周末不要提醒我"),
        ("I love cats.", "I hate cat."),
        ("别给我推荐贵的", "Don't recommend expensive restaurants."),
    ],
)
def test_the_same_subject_gets_the_same_key(first: str, second: str) -> None:
    [a] = extract_statements(first)
    [b] = extract_statements(second)
    assert a.key == b.key


def test_sweet_drinks_like_and_dislike_share_a_key_with_opposite_polarity() -> None:
    [like] = extract_statements("我喜欢喝甜的")
    [dislike] = extract_statements("我不喜欢含糖饮料")
    assert like.key == dislike.key == "preference.food.sugar"
    assert (like.polarity, dislike.polarity) == ("like", "dislike")


def test_a_scene_qualified_exception_coexists_with_the_general_rule() -> None:
    [general] = extract_statements("我不喜欢含糖饮料")
    [recent] = extract_statements("最近迷上自制低糖奶茶")
    assert recent.key != general.key and recent.key.endswith(".recent")
    assert (general.scope, recent.scope) == ("global", "domain:food")
    both = extract_statements("我不喜欢含糖饮料，但是最近迷上自制低糖奶茶")
    assert [i.key for i in both] == [general.key, recent.key]


def test_explicit_permanence_raises_confidence_and_time_bound_does_not() -> None:
    [plain] = extract_statements("周末别给我安排提醒")
    [lasting] = extract_statements("以后周末别给我安排提醒")
    [like] = extract_statements("我喜欢猫")
    assert lasting.confidence == CONF_EXPLICIT > plain.confidence > like.confidence == CONF_LIKE
    [today] = extract_statements("今天别推贵的")
    assert today.time_bound and today.confidence < CONF_EXPLICIT


def test_omitted_subject_is_trusted_slightly_less() -> None:
    [explicit] = extract_statements("我最近迷上自制低糖奶茶")
    [omitted] = extract_statements("最近迷上自制低糖奶茶")
    assert explicit.key == omitted.key and omitted.confidence < explicit.confidence


def test_the_later_statement_wins_within_one_message() -> None:
    [item] = extract_statements("我喜欢猫。不对，我不喜欢猫")
    assert item.polarity == "dislike"


def test_a_bare_prefix_joins_the_next_clause() -> None:
    [item] = extract_statements("以后，周末别给我安排提醒")
    assert item.key == "preference.schedule.weekend.reminders" and item.confidence == CONF_EXPLICIT
    assert item.evidence == "以后，周末别给我安排提醒"


def test_empty_and_whitespace() -> None:
    assert extract_statements("") == [] and extract_statements("  \n ") == []


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("以后周末别给我安排提醒", "以后周末也可以给我安排提醒了"),
        ("以后晚上别给我发通知", "以后晚上也可以给我发通知"),
    ],
)
def test_a_change_of_mind_phrased_as_permission_keeps_the_key_and_flips_polarity(
    before: str, after: str
) -> None:
    (old,) = extract_statements(before)
    (new,) = extract_statements(after)
    assert old.key == new.key and (old.polarity, new.polarity) == ("must_not", "must")
