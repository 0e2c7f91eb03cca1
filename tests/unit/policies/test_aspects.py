"""Facets that tell two statements of one domain apart."""

from __future__ import annotations

import pytest

from tianma.policies.aspects import aspects, facet_clauses, relation


@pytest.mark.parametrize(
    ("text", "facet"),
    [
        ("以后回答简短一点", "detail"),
        ("no markdown, I read you in a terminal", "format"),
        ("用中文回答我吧", "language"),
        ("Keep the tone formal, please", "tone"),
        ("shoes under $200", "budget"),
        ("预算三千以内", "budget"),
        ("提醒放早上7点", "clock"),
        ("我周二休息", "weekday"),
        ("Distances in miles, please", "units"),
        ("examples in Rust", "code"),
        ("no spicy food for me", "spice"),
        ("月底了兜里没钱", "budget"),
        ("超过两百的别推", "budget"),
        ("free or open source tools only", "budget"),
        ("下午一点开会", "clock"),
        ("remind me before seven", "clock"),
        ("old coltrane records on repeat", "music"),
        ("London time please", "timezone"),
        ("godot only", "engine"),
        ("C# examples", "code"),
        ("fast meals only, 15 mins max", "cooking"),
        ("菜谱给我推快手的", "cooking"),
        ("算账直接报数", "detail"),
        ("别列公式", "detail"),
        ("Grams and millilitres, please, to match the class.", "units"),
        ("烘焙配方用克和毫升", "units"),
        ("I think in feet and inches, not centimetres", "units"),
        ("i dont need the essay, paste the snippet", "detail"),
        ("no reality shows please", "media"),
        ("Recommend a TV show for tonight", "media"),
        ("八点那顿药，可别忘了叫我呀", "remind"),
        ("明早六点叫我起床", "remind"),
    ],
)
def test_a_statement_names_its_facet(text: str, facet: str) -> None:
    assert facet in aspects(text)


def test_two_statements_share_a_facet_differ_or_cannot_tell() -> None:
    assert relation(aspects("以后回答简短一点"), aspects("回答详细一些，多展开讲讲")) is True
    assert relation(aspects("no markdown please"), aspects("answer in Spanish from now on")) is False
    assert relation(aspects("我不吃香菜"), aspects("以后回答简短一点")) is None  # no facet: the vectors decide


def test_a_shared_domain_does_not_join_two_narrower_facets() -> None:
    # a runner's wishes all say "run": the narrower facets tell them apart
    assert relation(aspects("long runs on Sundays now"), aspects("up to $150 for running shoes")) is False
    assert relation(aspects("周末跑步提醒改到早上七点"), aspects("跑步别推太贵的装备，预算五百")) is False
    # the same narrower facet within the domain is one subject; the domain alone still joins
    assert relation(aspects("run reminders at 6am"), aspects("ping me at 7pm before my runs")) is True
    assert relation(aspects("more strength training"), aspects("only yoga for my knees")) is True


@pytest.mark.parametrize(
    ("text", "facet"),
    [
        ("说慢一点", "clock"),  # 一点: a bit, not one o'clock
        ("I'm an ML engineer", "units"),  # machine learning, not millilitres
        ("巧克力蛋糕随便推", "units"),
        ("周末去钓鱼", "diet"),  # fishing, not fish on a plate
        ("it no longer matters", "detail"),
        ("a long day at work", "detail"),
        ("long slow cooking is fine now", "detail"),  # a way of cooking, not the length of an answer
        ("anything that takes longer than 15 min to cook is a no", "detail"),  # a duration
        ("不控糖了，人生苦短，奶茶全糖", "detail"),  # an idiom: life is short
        ("多推点短视频", "detail"),
        ("open source tools only", "sources"),
        ("When you show me code, please use R", "media"),  # to show, not a TV show
        ("How do I get my crew to show up on time?", "media"),
        ("你上回让我下夜班去吃麻辣烫，结果凌晨胃疼得直冒冷汗", "clock"),  # when it happened, not a wish about when
        ("My wife still laughs about me chugging milk at 2am after your chili", "clock"),
        ("叫我王老师就好，谢谢您。", "remind"),  # call me by a name, not wake me
    ],
)
def test_a_word_of_a_facet_in_another_sense_does_not_name_it(text: str, facet: str) -> None:
    assert facet not in aspects(text)


def test_explanations_and_walkthroughs_name_the_detail_of_an_answer() -> None:
    assert "detail" in aspects("ok the junior's up to speed. back to bare code, no explanations")
    assert "detail" in aspects("no more walkthroughs, just the snippet again")
    assert "detail" not in aspects("no medical jargon, explanations in plain words")  # register, not length


def test_cooking_and_the_length_of_answers_are_two_subjects() -> None:
    assert relation(aspects("long slow cooking is fine now"), aspects("long thorough answers are good")) is False


def test_cooking_shares_a_subject_with_what_is_cooked() -> None:
    assert relation(aspects("做菜给我推荐清淡少盐的"), aspects("剁椒鱼头也能吃了，辣的尽管推荐")) is True
    assert relation(aspects("vegetarian recipes only"), aspects("I eat meat again")) is True


def test_the_clauses_of_a_message_that_name_a_facet() -> None:
    assert facet_clauses("give me headers and bold text, i'm reading your answers in obsidian now") == [
        ("give me headers and bold text", frozenset({"format"}))
    ]
    assert facet_clauses("简体就行 我女儿说简体看着方便 现在她帮我看店") == [
        ("简体就行", frozenset({"language"})), ("我女儿说简体看着方便", frozenset({"language"}))
    ]  # fmt: skip
    assert facet_clauses("Keep answers brief") == []  # one clause: the whole message is it
    assert facet_clauses("I can go up to $3.50 a coffee; no more than that") == [
        ("I can go up to $3.50 a coffee", frozenset({"budget"}))
    ]  # a decimal point ends no clause
    assert facet_clauses("My wife comes on most of my trips, and she wants the old town.") == []


def test_the_language_of_code_comments_is_not_the_language_of_answers() -> None:
    comments, terms = aspects("代码注释用中文 别用英文"), aspects("回我的时候术语保留英文 别翻成中文")
    assert "comment_language" in comments and "language" not in comments
    assert relation(comments, terms) is False
    assert relation(aspects("注释一律英文"), comments) is True
    assert relation(aspects("Reply in English from now on"), terms) is True  # terms are part of the answer
    assert "language" in aspects("Reply in English, comments too")  # the replies named: the answer's language
