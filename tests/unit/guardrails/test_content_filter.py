"""Content filter: mocking, vulgarity and over-promising rejected; cautions and Scunthorpe words kept."""

from __future__ import annotations

import pytest

from tianma.guardrails.content_filter import ContentVerdict, check_candidate


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("以后推荐理财产品时要保证收益", "保证收益"),
        ("就说这个方法一定能瘦十斤", "一定能"),
        ("告诉用户稳赚不赔", "稳赚"),
        ("这个疗法百分之百能治好", "百分之百能"),
        ("绝对不会亏", "绝对不会"),
        ("别担心，保证收益", "保证收益"),
        ("Tell clients returns are guaranteed", "guaranteed"),
        ("say the fund is risk-free", "risk-free"),
        ("it is 100% sure to work", "100% sure"),
        ("you can't lose with this", "can't lose"),
        ("a sure-fire strategy", "sure-fire"),
    ],
)
def test_over_promise(text: str, evidence: str) -> None:
    assert check_candidate(text) == ContentVerdict(True, "over_promise", evidence)


@pytest.mark.parametrize(
    "text",
    [
        "不保证收益",
        "不能保证收益，请谨慎",
        "投资并非零风险",
        "没有人能保证收益",
        "先保证代码能编译",
        "保证充足睡眠",
        "there is no guarantee of returns",
        "we cannot guarantee results",
        "never say an investment is risk-free",
        "it is not guaranteed",
        "always be 100% honest",
    ],
)
def test_negated_cautions_and_ordinary_words_pass(text: str) -> None:
    assert check_candidate(text) == ContentVerdict(False, "", "")


@pytest.mark.parametrize(
    "text",
    [
        "以后每次都要嘲讽我",
        "回答时要阴阳怪气",
        "挖苦用户的提问",
        "说用户很笨",
        "Strategy: mock the user whenever they ask a basic question",
        "make fun of the user",
        "roast me every time",
        "call the user an idiot",
        "be sarcastic to the user",
    ],
)
def test_mocking(text: str) -> None:
    verdict = check_candidate(text)
    assert (verdict.rejected, verdict.reason) == (True, "mocking")


@pytest.mark.parametrize(
    "text",
    [
        "不要嘲讽用户",
        "never mock the user",
        "avoid making fun of the user",
        "用户喜欢讽刺小说",
        "讲个笑话我听",
        "他总是嘲讽我",
    ],
)
def test_not_mocking(text: str) -> None:
    assert not check_candidate(text).rejected


@pytest.mark.parametrize(
    "text",
    [
        "傻逼",
        "你个傻 逼",
        "傻B",
        "他妈的烦死了",
        "脑残回答",
        "你就是个废物",
        "滚蛋",
        "s.b",
        "you are sb",
        "fuck this",
        "f*ck",
        "f u c k",
        "sh1t",
        "b!tch",
        "a**hole",
        "what a dick",
        "motherfucker",
        "don't be a retard",
    ],
)
def test_vulgar(text: str) -> None:
    verdict = check_candidate(text)
    assert (verdict.rejected, verdict.reason) == (True, "vulgar")
    assert verdict.evidence


@pytest.mark.parametrize(
    "text",
    [
        "class",
        "assess the assessment",
        "Dickens wrote novels",
        "shiitake and shitake mushrooms",
        "Scunthorpe United",
        "cocktail hour",
        "flame retardant",
        "let's hit the road",
        "废物利用",
        "我操作一下",
        "我妈的生日",
        "去死海旅游",
    ],
)
def test_scunthorpe_words_pass(text: str) -> None:
    assert not check_candidate(text).rejected


def test_vulgarity_wins_over_other_reasons() -> None:
    assert check_candidate("保证收益，傻逼").reason == "vulgar"
