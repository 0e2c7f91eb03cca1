from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.fakes import strategy_record
from tianma.policies.conflicts import Conflict, find_conflicts, opposite_actions, resolve, trigger_key
from tianma.storage.records import MemoryRecord, Status

_T0 = datetime(2025, 1, 1, tzinfo=UTC)
_TRIGGER = {"domains": ["general"], "keywords": ["Answer"]}


def _strategy(
    id: str,
    content: str,
    *,
    priority: int = 0,
    scope: str = "global",
    weight: float = 0.5,
    status: Status = "active",
    trigger: dict[str, Any] | None = None,
    **data: Any,
) -> MemoryRecord:
    return strategy_record(
        id, content, scope=scope, status=status,
        data={"trigger": _TRIGGER if trigger is None else trigger, "priority": priority, "weight": weight} | data,
    )  # fmt: skip


def _ids(records: tuple[MemoryRecord, ...]) -> list[str]:
    return [r.id for r in records]


# --- opposite_actions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("回答简短", "回答不要简短"),
        ("回答简短", "回答详细"),
        ("回答简洁一点", "展开讲讲"),
        ("精简", "具体一些"),
        ("先给结论", "先讲过程"),
        ("结论先行", "先解释"),
        ("语气正式", "语气轻松"),
        ("正式一点", "随意一点"),
        ("正式", "非正式"),
        ("用中文回答", "用英文回答"),
        ("多用表情", "不用表情"),
        ("Keep answers short", "Give detailed answers"),
        ("be brief", "explain in depth"),
        ("Be concise.", "Be thorough."),
        ("Use a formal tone", "Use a casual tone"),
        ("formal", "informal"),
        ("Reply in English", "Reply in Chinese"),
        ("conclusion first", "explain first"),
        ("推荐贵的", "不要推荐贵的"),
        ("回答详细", "不要展开"),
        ("don't be brief", "be concise"),
    ],
)
def test_opposite(a: str, b: str) -> None:
    assert opposite_actions(a, b)
    assert opposite_actions(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("回答简短", "回答不要详细"),
        ("回答简短", "回答简洁"),
        ("回答简短", "回答简短"),
        ("Keep it short", "Be concise"),
        ("Be brief", "avoid detailed answers"),
        ("回答简短", "用中文回答"),
        ("回答简短，不用客套", "回答精简"),
        ("不要详细，而是简短", "回答简短"),
        ("Use a formal tone", "Reply in English"),
        ("多用表情", "用表情包活跃气氛"),
        ("推荐便宜的", "推荐实惠的"),
    ],
)
def test_not_opposite(a: str, b: str) -> None:
    assert not opposite_actions(a, b)
    assert not opposite_actions(b, a)


def test_trigger_key_normalises() -> None:
    a = trigger_key({"domains": ["x", "y"], "keywords": ["Foo", "bar"], "hours": [22, 6]})
    b = trigger_key({"domains": ["y", "x"], "keywords": ["BAR", "foo"], "hours": (22, 6)})
    assert a == b
    assert trigger_key(None) == trigger_key({}) == trigger_key({"hours": []})
    assert trigger_key({"hours": [9, 17]}) != trigger_key({})


# --- resolve -------------------------------------------------------------------------------


def test_equal_priority_opposite_both_disabled() -> None:
    a, b = _strategy("a", "回答简短"), _strategy("b", "回答详细")
    other = _strategy("c", "先给结论")
    res = resolve([a, b, other])
    assert _ids(res.kept) == ["c"]
    assert sorted(_ids(res.disabled)) == ["a", "b"]
    assert res.conflicts == (
        Conflict("a", "b", "same trigger and scope, opposite actions, equal priority 0"),
    )
    assert res.overridden == ()
    assert find_conflicts([a, b, other]) == list(res.conflicts)


def test_higher_priority_wins() -> None:
    low, high = _strategy("low", "回答简短", priority=1), _strategy("high", "回答不要简短", priority=3)
    res = resolve([low, high])
    assert _ids(res.kept) == ["high"]
    assert res.disabled == () and res.conflicts == ()
    assert res.overridden == (("high", "low"),)
    assert find_conflicts([low, high]) == []


def test_higher_priority_wins_even_from_broader_scope() -> None:
    narrow = _strategy("n", "回答简短", scope="dialogue:d1", priority=0)
    broad = _strategy("g", "回答详细", scope="global", priority=2)
    res = resolve([narrow, broad])
    assert _ids(res.kept) == ["g"] and res.overridden == (("g", "n"),)


@pytest.mark.parametrize(
    ("narrow_scope", "broad_scope"),
    [("dialogue:d1", "domain:cooking"), ("domain:cooking", "global"), ("dialogue:d1", "global")],
)
def test_narrower_scope_wins_at_equal_priority(narrow_scope: str, broad_scope: str) -> None:
    broad = _strategy("broad", "回答简短", scope=broad_scope, weight=0.9)
    narrow = _strategy("narrow", "回答详细", scope=narrow_scope, weight=0.1)
    res = resolve([broad, narrow])
    assert _ids(res.kept) == ["narrow"]
    assert res.overridden == (("narrow", "broad"),)
    assert res.conflicts == () and res.disabled == ()
    assert find_conflicts([broad, narrow]) == []


def test_same_rank_different_scopes_not_compared() -> None:
    a = _strategy("a", "回答简短", scope="domain:cooking")
    b = _strategy("b", "回答详细", scope="domain:travel")
    res = resolve([a, b])
    assert sorted(_ids(res.kept)) == ["a", "b"] and res.conflicts == ()


def test_non_opposite_same_trigger_both_kept_in_order() -> None:
    a = _strategy("a", "回答简短", weight=0.3)
    b = _strategy("b", "先给结论", weight=0.8)
    c = _strategy("c", "用中文回答", priority=1)
    d = _strategy("d", "多用表情", scope="dialogue:d1", weight=0.1)
    res = resolve([a, b, c, d])
    assert _ids(res.kept) == ["c", "d", "b", "a"]
    assert res.disabled == () and res.conflicts == () and res.overridden == ()


def test_different_triggers_not_compared() -> None:
    a = _strategy("a", "回答简短", trigger={"domains": ["general"]})
    b = _strategy("b", "回答详细", trigger={"domains": ["finance"]})
    c = _strategy("c", "回答详细", trigger={"domains": ["general"], "hours": [22, 6]})
    res = resolve([a, b, c])
    assert sorted(_ids(res.kept)) == ["a", "b", "c"]
    assert find_conflicts([a, b, c]) == []


def test_same_trigger_despite_keyword_case_and_order() -> None:
    a = _strategy("a", "回答简短", trigger={"keywords": ["Recipe", "dinner"]})
    b = _strategy("b", "回答详细", trigger={"keywords": ["DINNER", "recipe"]})
    assert len(resolve([a, b]).conflicts) == 1


def test_redlines_untouched() -> None:
    red = _strategy("red", "回答详细", redline={"action": "replace"})
    a = _strategy("a", "回答简短")
    b = _strategy("b", "回答不要简短")
    res = resolve([red, a, b])
    assert _ids(res.kept) == ["red"]
    assert sorted(_ids(res.disabled)) == ["a", "b"]
    low = _strategy("low", "回答简短", priority=-1)
    res = resolve([red, low])
    assert sorted(_ids(res.kept)) == ["low", "red"] and res.overridden == ()
    assert find_conflicts([red, low]) == []


def test_third_opposite_joins_disabled_conflict() -> None:
    a, b, c = _strategy("a", "回答简短"), _strategy("b", "回答详细"), _strategy("c", "回答精简")
    res = resolve([a, b, c])
    assert res.kept == ()
    assert sorted(_ids(res.disabled)) == ["a", "b", "c"]
    assert {(x.a_id, x.b_id) for x in res.conflicts} == {("a", "b"), ("b", "c")}


def test_find_conflicts_only_active_each_pair_once() -> None:
    strategies = [
        _strategy("b", "回答详细"),
        _strategy("a", "回答简短"),
        _strategy("z", "回答简短", status="disabled"),
        _strategy("c", "回答简洁", priority=2),
    ]
    assert [(x.a_id, x.b_id) for x in find_conflicts(strategies)] == [("a", "b")]
