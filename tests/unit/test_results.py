"""The public API's result types: no ``dict[str, Any]`` in Runtime's signatures, the service's
dict back exactly from ``as_dict``, frozen values, the same type through the admin codec."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

import tianma
from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, learning_model
from tests.unit.memory.test_signal_aggregation import signal, turn
from tests.unit.test_behaviour_review import SUNDAY, a_week
from tianma import Runtime, results
from tianma.memory import reviews
from tianma.memory.behaviour_review import review_user
from tianma.memory.edits import edit_record
from tianma.memory.reflection_store import maintain_user, record_history
from tianma.memory.signal_aggregation import aggregate_signals
from tianma.operations import learning as learning_ops
from tianma.operations import memory as memory_ops
from tianma.results import (
    AbDecision,
    AggregationReport,
    BehaviourProposal,
    BehaviourReport,
    Decision,
    Edit,
    LateStats,
    MaintenanceReport,
    ReflectionItem,
    ReflectionReport,
    Review,
    Rollback,
    TopicStats,
    Version,
)
from tianma.storage import schema as t
from tianma.storage.records import Provenance

T0 = datetime(2026, 6, 1, 9, tzinfo=UTC)
EMPTY = {"new_facts": [], "revised_preferences": [], "new_strategies": [], "deprecated_memories": []}
RESULT_TYPES = sorted(
    (v for v in vars(results).values() if isinstance(v, type) and v.__module__ == results.__name__
     and dataclasses.is_dataclass(v)),
    key=lambda cls: cls.__name__,
)  # fmt: skip


# -- no dict[str, Any] in Runtime's signatures ---------------------------------------------------


def is_loose_dict(hint: Any) -> bool:
    """Whether ``hint`` is ``dict[str, Any]`` or has it inside (``list[dict[str, Any]] | None`` …)."""
    if typing.get_origin(hint) is dict and typing.get_args(hint) == (str, Any):
        return True
    return any(is_loose_dict(arg) for arg in typing.get_args(hint))


def loose_returns(cls: type) -> list[str]:
    """The public methods of ``cls`` whose return annotation has ``dict[str, Any]`` in it."""
    return [
        name
        for name, fn in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and is_loose_dict(typing.get_type_hints(fn).get("return"))
    ]


class LooseApi:
    """What the check must catch."""

    def report(self) -> dict[str, Any]:
        return {}

    def reports(self) -> list[dict[str, Any]] | None:
        return None

    def legacy(self) -> typing.Dict[str, Any]:  # noqa: UP006 - the old spelling must be caught too
        return {}

    def counts(self) -> dict[str, int]:
        return {}

    def _private(self) -> dict[str, Any]:
        return {}


def test_the_check_catches_a_method_returning_a_loose_dict() -> None:
    assert loose_returns(LooseApi) == ["legacy", "report", "reports"]


def test_no_public_runtime_method_returns_a_loose_dict() -> None:
    checked = [
        name for name, _ in inspect.getmembers(Runtime, inspect.isfunction) if not name.startswith("_")
    ]
    assert {"reflect", "maintain", "history", "pending", "approve", "edit", "weekly_review"} <= set(checked)
    assert loose_returns(Runtime) == []


# -- each result from the dict its service returns, and back -------------------------------------


def round_trip(cls: type[Any], x: Mapping[str, Any]) -> Any:
    """``cls.from_dict(x)``, checked to give ``x`` back exactly and to be frozen."""
    value = cls.from_dict(x)
    assert value.as_dict() == x
    assert type(value) is cls
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, dataclasses.fields(value)[0].name, None)
    return value


def through_the_wire(op: Any, value: Any) -> Any:
    """``value`` as the CLI gets it from the admin API (or from a home it opened itself)."""
    return op.decode_result(json.loads(json.dumps(op.encode_result(value))))


@pytest.fixture
def rt(make_runtime: RuntimeFactory) -> Runtime:
    return make_runtime(chat_model=learning_model(json.dumps(EMPTY)), embedder=CharacterEmbedder())


def stored_report(rt: Runtime, run_id: str) -> dict[str, Any]:
    runs = t.reflection_runs.c
    with rt.memory.store.engine.connect() as conn:
        report: dict[str, Any] = conn.execute(select(runs.report).where(runs.id == run_id)).scalar_one()
    return report


def test_a_reflection_report(rt: Runtime) -> None:
    rt.chat("u", "我对花生过敏。", dialogue_id="d1", at=T0)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    x = stored_report(rt, report.run_id)  # what the run stored is the dict the reflection returned
    assert report == round_trip(ReflectionReport, x) and report.as_dict() == x
    assert report.items and all(type(i) is ReflectionItem for i in report.items)
    assert report.counts and report.llm["called"] is True
    assert through_the_wire(learning_ops.reflect, [report]) == [report]
    assert learning_ops.reflect.encode_result([report]) == [x]  # the admin API's JSON is unchanged


def add(rt: Runtime, kind: str, content: str, at: datetime = T0, **fields: Any) -> str:
    record = rt.memory.store.add_record("u", kind, content, Provenance(source="test"), at=at, **fields)
    rt.memory.index([record])
    return record.id


def test_a_maintenance_report_with_decay_and_an_ab_decision(rt: Runtime) -> None:
    idle = add(rt, "fact", "用户的猫叫咪咪", confidence=0.7)
    later = T0 + timedelta(days=120)
    worse, better = (
        add(rt, "strategy", action, at=later - timedelta(days=1),
            data={"trigger": {"domains": ["tech"]}, "stats": {"trials": n, "reward_sum": n * mean}})
        for action, n, mean in (("回答代码问题时要简短", 12, 0.41), ("回答代码问题时先给代码", 14, 0.78))
    )  # fmt: skip
    x = maintain_user(rt.memory, "u", later)
    report = round_trip(MaintenanceReport, x)
    assert idle in report.inactive + report.decayed
    assert report.ab == (AbDecision(better, worse, x["ab"][0]["reason"]),)
    assert report.as_dict() == stored_report(rt, report.run_id)
    assert through_the_wire(learning_ops.maintain, [report]) == [report]


def test_an_aggregation_report(rt: Runtime) -> None:
    target = turn(rt, "d", 0)
    signal(rt, "impatience", 0.4, target, "d", 1)
    signal(rt, "silence", 0.3, target, "d", 2)
    x = aggregate_signals(rt.memory, "u", T0 + timedelta(hours=6))
    report = round_trip(AggregationReport, x)
    assert len(report.merged) == 1 and report.weak_by_type == {"impatience": 1, "silence": 1}
    assert rt.aggregate_signals(T0 + timedelta(hours=6)) == []  # archived: a second pass sees none


def test_a_weekly_review_its_reviews_and_what_a_person_then_does(rt: Runtime) -> None:
    a_week(rt, {"finance": 4})
    x = review_user(rt.memory, rt.constitution, "u", SUNDAY, rt.settings.zone)
    report = round_trip(BehaviourReport, x)
    assert type(report.late) is LateStats and all(type(s) is TopicStats for s in report.topics)
    (proposal,) = report.proposals
    assert type(proposal) is BehaviourProposal and proposal.status == "queued"
    assert report.since == SUNDAY - timedelta(days=7) and x["since"] == report.since.isoformat()
    assert rt.weekly_review("u", SUNDAY)[0].proposals[0].status == "already_open"

    (row,) = reviews.list_reviews(rt.memory.store, "u", "pending")
    review = round_trip(Review, row)
    assert rt.pending("u") == [review] and review.id == proposal.review_id
    assert through_the_wire(memory_ops.list_reviews, [review]) == [review]

    decision = round_trip(Decision, reviews.decide(rt.memory, review.id, True, "ok", SUNDAY))
    assert decision.status == "approved" and decision.run_id == decision.decided_run != review.run_id
    assert through_the_wire(memory_ops.decide_review, decision) == decision

    assert proposal.record_id is not None
    done = round_trip(Rollback, reviews.rollback(rt.memory, proposal.record_id, None, SUNDAY))
    assert (done.restored_version, done.version) == (1, 3)
    assert through_the_wire(memory_ops.rollback, done) == done

    fact = add(rt, "fact", "用户喜欢喝美式咖啡", confidence=0.8)
    edit = round_trip(Edit, edit_record(rt.memory, fact, "用户喜欢喝拿铁", "口味变了", SUNDAY))
    assert (edit.version, edit.content) == (2, "用户喜欢喝拿铁")

    rows = record_history(rt.memory.store, fact)
    old, current = (round_trip(Version, v) for v in rows)
    assert (old.current, current.current) == (False, True) and "current" not in old.as_dict()
    assert rt.history(fact) == [old, current] and old.run_id == edit.run_id
    assert through_the_wire(memory_ops.history, [old, current]) == [old, current]


def test_unknown_keys_are_ignored_and_a_missing_field_is_an_error() -> None:
    x = {"run_id": "r", "record_id": "a", "version": 2, "content": "c"}
    assert Edit.from_dict({**x, "later": "added"}).as_dict() == x
    with pytest.raises(TypeError, match="content"):
        Edit.from_dict({k: v for k, v in x.items() if k != "content"})


# -- frozen, slotted, exported ------------------------------------------------------------------


@pytest.mark.parametrize("cls", RESULT_TYPES, ids=lambda cls: cls.__name__)
def test_every_result_type_is_a_frozen_slotted_exported_dataclass(cls: type) -> None:
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen and "__slots__" in vars(cls)
    assert cls.__name__ in tianma.__all__ and getattr(tianma, cls.__name__) is cls
    value = object.__new__(cls)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, dataclasses.fields(cls)[0].name, None)
    assert not hasattr(value, "__dict__")


def reachable(hint: Any) -> set[type]:
    """The result types in ``hint`` and, through their fields, in those."""
    found: set[type] = set()
    if isinstance(hint, type) and hint in RESULT_TYPES:
        found.add(hint)
        for field in typing.get_type_hints(hint).values():
            found |= reachable(field)
    for arg in typing.get_args(hint):
        found |= reachable(arg)
    return found


def test_every_result_type_is_something_runtime_returns() -> None:
    returned = set().union(*(reachable(typing.get_type_hints(fn).get("return"))
                             for _, fn in inspect.getmembers(Runtime, inspect.isfunction)))  # fmt: skip
    assert len(RESULT_TYPES) >= 14 and returned >= set(RESULT_TYPES)
