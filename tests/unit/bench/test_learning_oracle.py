"""The oracle reflection model of `tianma bench learning --model oracle` (tianma.bench.learning_oracle)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from langchain_core.messages import HumanMessage

from tests.unit.bench.test_learning import TINY, write
from tianma.bench.learning_oracle import Oracle
from tianma.bench.learning_sim import load_scenario
from tianma.prompting import reflection_messages

D0 = datetime(2026, 3, 2, tzinfo=UTC)
OLD, NEW, MOOD = "以后周末别给我安排提醒", "以后周末也可以给我安排提醒了", "今天别给我推贵的"


def _event(i: str, text: str, days: int) -> dict[str, object]:
    return {"id": i, "text": text, "at": D0 + timedelta(days=days), "statement": {"kind": "wish"}}


def test_it_names_the_older_version_a_later_one_replaced_and_nothing_else(tmp_path: Path) -> None:
    oracle = Oracle.of(load_scenario(write(tmp_path, TINY)))
    standing = [{"id": "s-new", "at": D0 + timedelta(days=3), "text": NEW},
                {"id": "s-mood", "at": D0 + timedelta(days=1), "text": MOOD},
                {"id": "s-old", "at": D0, "text": OLD}]  # fmt: skip
    messages = reflection_messages([_event("e-new", NEW, 3)], [], standing=standing)

    answer = json.loads(oracle.respond(messages, "unused"))

    assert answer["superseded_statements"] == [{"statement_id": "s-old", "by_event_id": "s-new"}]
    assert answer["new_facts"] == answer["revised_preferences"] == []


def test_without_statements_that_still_hold_it_names_none_and_other_prompts_get_the_fallback(tmp_path: Path) -> None:
    oracle = Oracle.of(load_scenario(write(tmp_path, TINY)))
    alone = reflection_messages([_event("e-old", OLD, 0)], [])
    assert json.loads(oracle.respond(alone, "unused"))["superseded_statements"] == []
    assert oracle.respond([HumanMessage("你好")], "好的。") == "好的。"


def test_a_wrong_rate_adds_random_pairs(tmp_path: Path) -> None:
    oracle = Oracle.of(load_scenario(write(tmp_path, TINY)), wrong=1.0)
    standing = [{"id": f"s{k}", "at": D0 + timedelta(days=k), "text": f"第{k}条"} for k in range(4)]
    answer = json.loads(oracle.respond(reflection_messages([], [], standing=standing), "unused"))
    assert len(answer["superseded_statements"]) == 1 and oracle.wrong_pairs == 1
