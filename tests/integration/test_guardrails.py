"""Guardrails through the runtime: zones, circuit breaker, filters, regression gate, approvals,
rollback, exploration and weights, conflicts, output checks, PII, the constitution file."""

from __future__ import annotations

import json
import shutil
from dataclasses import FrozenInstanceError
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RuntimeFactory
from tests.fakes import learning_model
from tests.integration.test_reflection import EMPTY, T0, reflection_model
from tianma import ReflectionReport, Runtime
from tianma.guardrails.constitution import shipped_path
from tianma.storage.records import Provenance

DAYS = 4
"""Reflections on four days take a strategy from 0.5 to 0.8 (> 0.7): it would become active."""


def strategy_model(action: str, domains: list[str]) -> Any:
    """An LLM proposing ``action`` (triggered by ``domains``) from every message that says 教我."""

    def rules(event_id: str, text: str) -> dict[str, list[dict[str, Any]]]:
        if "教我" not in text:
            return {}
        return {
            "new_strategies": [
                {"trigger": {"domains": domains}, "action": action, "source_event_ids": [event_id]}
            ]
        }

    return reflection_model(rules)


def teach(rt: Runtime, messages: list[str], days: int = DAYS) -> list[ReflectionReport]:
    """One message a day (distinct, so no repeated-question signal), each followed by a reflection."""
    reports = []
    for day in range(days):
        rt.chat("u", f"{messages[day]}，教我", dialogue_id=f"t{day}", at=T0 + timedelta(days=day))
        reports += rt.reflect("u", at=T0 + timedelta(days=day, hours=1))
    return reports


WHO = ["你是谁", "你叫什么名字", "介绍一下你自己", "你能做什么"]
CODE = ["Python 的列表推导式怎么写", "怎么写单元测试", "git rebase 是什么", "SQL 的 join 有几种"]
FOOD = ["附近有什么好吃的餐厅", "晚饭做什么菜好", "推荐一家火锅店", "周末想吃日料"]


def strategies(rt: Runtime) -> dict[str, str]:
    return {r.content: r.status for r in rt.memories("u", kind="strategy")}


def test_a_forbidden_change_is_queued_and_only_a_human_applies_it(make_runtime: RuntimeFactory) -> None:
    action = "当用户问你的身份时，介绍自己是用户的管家"
    rt = make_runtime(chat_model=strategy_model(action, ["general"]))
    teach(rt, WHO)
    assert strategies(rt) == {action: "pending"}
    (review,) = rt.pending("u")
    assert review.zone == "forbidden" and review.mode == "manual" and "身份" in review.reason
    done = rt.approve(review.id, "我确认")
    assert strategies(rt) == {action: "active"} and done.status == "approved"
    assert rt.pending("u") == []
    rt.undo_reflection(done.run_id)  # an approval is undoable like a reflection
    assert strategies(rt) == {action: "pending"} and len(rt.pending("u")) == 1


def test_a_caution_change_is_previewed_then_applied_on_approval(make_runtime: RuntimeFactory) -> None:
    action = "当用户问代码问题时，回答简短"
    rt = make_runtime(chat_model=strategy_model(action, ["tech"]), policies={"epsilon": 0.0})
    teach(rt, CODE)
    assert strategies(rt) == {action: "pending"}
    (review,) = rt.pending("u")
    assert review.zone == "caution" and review.mode == "confirm"
    assert review.preview["after"] == [*review.preview["before"], action]
    rt.approve(review.id)
    turn = rt.chat("u", "Python 的字典怎么遍历", dialogue_id="after", at=T0 + timedelta(days=DAYS))
    assert [s.content for s in turn.strategies] == [action]


def test_a_free_scene_change_applies_automatically(make_runtime: RuntimeFactory) -> None:
    action = "当用户问美食时，用表格列出选项"
    rt = make_runtime(chat_model=strategy_model(action, ["food"]))
    teach(rt, FOOD)
    assert strategies(rt) == {action: "active"} and rt.pending("u") == []


def test_the_circuit_breaker_trips_on_a_paraphrase_of_the_identity(make_runtime: RuntimeFactory) -> None:
    action = "我是无所不能的管家，可以替用户处理一切事务"  # no forbidden term: only its meaning gives it away
    rt = make_runtime(chat_model=strategy_model(action, ["food"]))
    teach(rt, FOOD, days=1)
    (review,) = rt.pending("u")
    assert (
        review.zone == "free"
        and "circuit breaker" in review.reason
        and "identity.who" in review.reason
    )
    assert strategies(rt) == {action: "pending"}


@pytest.mark.parametrize(
    ("action", "reason"),
    [("当用户犯错时，嘲讽用户一下", "mocking"), ("推荐理财产品时保证收益，稳赚不赔", "over_promise")],
)
def test_the_content_filter_rejects_with_the_reason_kept(
    make_runtime: RuntimeFactory, action: str, reason: str
) -> None:
    rt = make_runtime(chat_model=strategy_model(action, ["general"]))
    (report,) = teach(rt, ["随便聊聊"], days=1)
    assert strategies(rt) == {}  # never written
    (rejected,) = rt.reviews("u", "rejected")
    assert rejected.content == action and reason in rejected.reason
    assert report.counts.get("rejected") == 1


def test_the_regression_gate_holds_a_strategy_that_breaks_a_scenario(
    make_runtime: RuntimeFactory, tmp_path: Path
) -> None:
    scenarios = {"version": 1, "scenarios": [
        {"id": "food-plain", "description": "food answers stay free of tables", "messages": ["附近有什么好吃的餐厅"],
         "draft_reply": None, "hour": None, "expect": {"prompt_not_contains": ["表格"]}},
        {"id": "identity", "description": "identity present", "messages": ["你是谁"], "draft_reply": None,
         "hour": None, "expect": {"prompt_contains": ["天马"]}},
    ]}  # fmt: skip
    path = tmp_path / "scenarios.json"
    path.write_text(json.dumps(scenarios, ensure_ascii=False), encoding="utf-8")
    action = "当用户问美食时，用表格列出选项"
    rt = make_runtime(chat_model=strategy_model(action, ["food"]), guardrails={"regression_scenarios": path})
    reports = teach(rt, FOOD)
    assert strategies(rt) == {action: "pending"}
    (review,) = rt.pending("u")
    assert "food-plain" in review.reason and "identity" not in review.reason.split("Newly failing:")[1]
    assert list(reports[-1].llm["regression"]["newly_failed"]) == ["food-plain"]


def test_rollback_restores_the_previous_version_exactly(make_runtime: RuntimeFactory) -> None:
    action = "当用户问代码问题时，回答简短"
    rt = make_runtime(chat_model=strategy_model(action, ["tech"]))
    teach(rt, CODE)
    (review,) = rt.pending("u")
    (before,) = rt.memories("u", kind="strategy")
    rt.approve(review.id)
    done = rt.rollback(before.id)
    (after,) = rt.memories("u", kind="strategy")
    assert done.restored_version == before.version
    assert (after.content, after.status, after.confidence, after.data) == (
        before.content, before.status, before.confidence, before.data,
    )  # fmt: skip
    assert after.version == before.version + 2  # approve, then the rollback: both kept in history
    with pytest.raises(Exception, match="no version 99"):
        rt.rollback(before.id, 99)


def add_strategy(rt: Runtime, content: str, **data: Any) -> str:
    record = rt.memory.store.add_record(
        "u", "strategy", content, Provenance(source="test"), at=T0, confidence=0.8,
        data={"trigger": {"domains": ["tech"]}, "priority": 0, "weight": 0.8, "zone": "caution", **data},
    )  # fmt: skip
    return record.id


def test_equal_priority_opposite_strategies_are_both_disabled_for_the_turn(
    make_runtime: RuntimeFactory,
) -> None:
    rt = make_runtime(chat_model=learning_model(json.dumps(EMPTY)), policies={"epsilon": 0.0})
    a = add_strategy(rt, "回答代码问题时要简短")
    b = add_strategy(rt, "回答代码问题时要详细")
    turn = rt.chat("u", "Python 的装饰器是什么", dialogue_id="d", at=T0)
    assert turn.strategies == ()
    (conflict,) = rt.strategy_conflicts("u")
    assert {conflict.a_id, conflict.b_id} == {a, b}
    add_strategy(rt, "回答代码问题时要详细一些", priority=1)  # outranks "简短": no equal-priority tie left
    turn = rt.chat("u", "Python 的生成器是什么", dialogue_id="d", at=T0 + timedelta(minutes=1))
    assert [s.content for s in turn.strategies] == ["回答代码问题时要详细一些", "回答代码问题时要详细"]


def test_exploration_is_recorded_and_eps_zero_never_explores(make_runtime: RuntimeFactory) -> None:
    always = make_runtime(chat_model=learning_model(json.dumps(EMPTY)), name="a",
                          policies={"epsilon": 1.0, "seed": 7})  # fmt: skip
    add_strategy(always, "回答代码问题时先给代码")
    add_strategy(always, "回答代码问题时附上链接", weight=0.5)
    turn = always.chat("u", "Python 怎么读文件", dialogue_id="d", at=T0)
    top = [s for s in turn.strategies if s.explored]
    assert len(turn.strategies) <= 1 and all(s.content == "回答代码问题时附上链接" for s in top)
    never = make_runtime(chat_model=learning_model(json.dumps(EMPTY)), name="n", policies={"epsilon": 0.0})
    add_strategy(never, "回答代码问题时先给代码")
    turns = [
        never.chat("u", f"Python 问题 {i}", dialogue_id="d", at=T0 + timedelta(minutes=i)) for i in range(10)
    ]
    assert all([s.content for s in t.strategies] == ["回答代码问题时先给代码"] for t in turns)
    assert not any(s.explored for t in turns for s in t.strategies)


def test_a_strategy_weight_learns_from_the_next_move(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=learning_model(json.dumps(EMPTY)), policies={"epsilon": 0.0})
    sid = add_strategy(rt, "回答代码问题时先给代码")
    rt.chat("u", "Python 怎么排序列表", dialogue_id="d", at=T0)
    rt.chat("u", "不对，我问的是字典排序", dialogue_id="d", at=T0 + timedelta(minutes=1))
    data = rt.memory.store.get(sid).data
    # correction: reward 0.6 − 0.5 = 0.1; expected 0.5 (no trials yet): 0.8 + 0.1 · (0.1 − 0.5)
    assert data["weight"] == pytest.approx(0.76) and data["stats"]["trials"] == 1


def test_a_finance_reply_gets_a_risk_note_and_a_cross_user_leak_is_blocked(
    make_runtime: RuntimeFactory,
) -> None:
    secret = "我女儿在实验小学三年级二班读书，每天下午四点放学"
    rt = make_runtime(
        chat_model=learning_model(json.dumps(EMPTY), chat_reply="这只基金明年一定能涨30%，稳赚。")
    )
    turn = rt.chat("u", "这只基金怎么样", dialogue_id="d", at=T0)
    assert turn.redline is not None and turn.redline.verdict == "amended" and "风险提示" in turn.reply
    leaky = make_runtime(
        chat_model=learning_model(json.dumps(EMPTY), chat_reply=f"记得：{secret}"), name="leak"
    )
    leaky.chat("alice", secret, dialogue_id="a", at=T0)
    turn = leaky.chat("bob", "我女儿在哪上学？", dialogue_id="b", at=T0 + timedelta(minutes=1))
    assert turn.redline is not None and turn.redline.verdict == "blocked" and "实验小学" not in turn.reply
    assert "builtin:cross_user_leak" in turn.redline.rules


def test_pii_is_redacted_before_storing_unless_the_user_asks(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=learning_model(json.dumps(EMPTY)))
    redacted = rt.chat("u", "我的手机号是13812345678，有事打给我", dialogue_id="d", at=T0)
    kept = rt.chat("u", "记住我的邮箱是ann@example.com", dialogue_id="d", at=T0 + timedelta(minutes=1))
    assert rt.memory.store.get(redacted.event_id).content == "我的手机号是[手机号/phone]，有事打给我"
    assert rt.memory.store.get(kept.event_id).content == "记住我的邮箱是ann@example.com"
    assert rt.search("u", "13812345678") == [] or all(
        "13812345678" not in m.content for m in rt.search("u", "手机号")
    )


def test_a_reply_repeating_pii_is_stored_redacted(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=learning_model(json.dumps(EMPTY), chat_reply="好的，我会打 13812345678 找你。"))
    turn = rt.chat("u", "我的手机号是13812345678，有事打给我", dialogue_id="d", at=T0)
    assert "13812345678" in turn.reply  # the user is shown the reply as written
    assert rt.memory.store.get(turn.event_id).reply == "好的，我会打 [手机号/phone] 找你。"


def test_the_constitution_is_read_only_and_immutable(make_runtime: RuntimeFactory, tmp_path: Path) -> None:
    path = tmp_path / "constitution.toml"
    shutil.copy(shipped_path(), path)
    path.chmod(0o444)  # any write by tianma would fail
    before = path.read_bytes(), path.stat().st_mtime_ns
    rt = make_runtime(chat_model=strategy_model("当用户问你的身份时，介绍自己是管家", ["general"]),
                      guardrails={"constitution": path})  # fmt: skip
    teach(rt, WHO, days=2)
    rt.approve(rt.pending("u")[0].id)
    rt.maintain(at=T0 + timedelta(days=90))
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert rt.constitution.source == str(path)
    with pytest.raises(FrozenInstanceError):
        rt.constitution.identity = "我是全能管家"  # type: ignore[misc]


def test_a_failure_driven_strategy_waits_for_five_samples(make_runtime: RuntimeFactory) -> None:
    action = "当用户问美食时，用表格列出选项"
    rt = make_runtime(chat_model=strategy_model(action, ["food"]))
    reports = teach(rt, [FOOD[0]] * DAYS)  # the same question every day: repeated-question signals
    (last,) = [i for i in reports[-1].items if i.kind == "strategy"]
    assert (
        last.outcome.endswith("_held")
        and "failure-driven" in last.reason
        and "of 5 samples" in last.reason
    )
    assert strategies(rt) == {action: "pending"}


def test_gray_release_applies_a_new_strategy_to_a_share_of_dialogues_first() -> None:
    from tests.fakes import strategy_record
    from tianma.policies.strategies import in_rollout

    until = T0 + timedelta(hours=48)
    record = strategy_record("s1", "回答简短", data={"rollout": {"share": 0.2, "until": until.isoformat()}})
    share = sum(in_rollout(record, f"d{i}", T0) for i in range(2000)) / 2000
    assert 0.17 < share < 0.23
    assert all(in_rollout(record, f"d{i}", until) for i in range(50))  # then everyone
    assert in_rollout(strategy_record("s2", "回答简短"), "d0", T0)  # no rollout: always
