"""`tianma bench learning`: scenario files load or fail clearly; a tiny run yields curves, cost, a plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from tianma.bench.common import BenchContext
from tianma.bench.learning import DEFAULT_SCENARIOS, run, section, sized
from tianma.bench.learning_curves import ChatCalls, cost, curve, purpose
from tianma.bench.learning_sim import load_scenario
from tianma.errors import InvalidInputError
from tianma.prompting import reflection_messages

TINY: dict[str, Any] = {
    "name": "tiny",
    "seed": 3,
    "turns_per_user": 12,
    "dialogue_length": 4,
    "users": [
        {
            "id": "li",
            "preferences": [
                {
                    "id": "li.weekend",
                    "domain": "schedule",
                    "statement": "以后周末别给我安排提醒",
                    "kind": "explicit",
                    "changes": [{"at_turn": 8, "statement": "以后周末也可以给我安排提醒了"}],
                    "question_templates": ["这周六帮我安排一下吧", "周日上午有什么要提醒我的吗"],
                },
                {
                    "id": "li.spicy",
                    "domain": "food",
                    "statement": "上次你推荐的那家川菜馆辣得我一晚上没睡好",
                    "kind": "implicit",
                    "question_templates": ["今晚吃什么好"],
                },
            ],
            "moods": [{"at_turn": 5, "text": "今天别给我推贵的"}],
        }
    ],
}


def write(tmp_path: Path, data: Any, name: str = "tiny.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.slow
def test_tiny_scenario_runs_three_arms_and_draws_the_curve(tmp_path: Path) -> None:
    path = write(tmp_path, TINY)
    ctx = BenchContext(data=None, out=tmp_path / "out", mode="smoke", show_progress=False)

    payload = run(ctx, scenarios=path)

    assert payload["benchmark"] == "learning" and payload["mode"] == "smoke"
    assert payload["scenario"]["name"] == "tiny" and payload["scenario"]["path"] == str(path)
    assert len(payload["scenario"]["sha256"]) == 64
    assert [a["arm"] for a in payload["arms"]] == ["none", "memory", "reflection"]
    for arm in payload["arms"]:
        m = arm["metrics"]
        assert m["turns"] == 12 and 0 <= m["hit_rate"] <= 1 and 0 <= m["negative_rate"] <= 1
    curves = payload["curves"]["arms"]
    assert set(curves) == {"none", "memory", "reflection"}
    for points in curves.values():
        assert points and sum(p["user_turns"] for p in points) == 12
        assert any(p["hit_rate"] is not None for p in points)
    rc = payload["reflection_cost"]
    assert rc["learning_calls_per_100_turns"] >= 0 and rc["learning_tokens_in_per_100_turns"] >= 0
    assert rc["target"] == 5 and isinstance(rc["met"], bool)
    assert rc["per_100_turns"]["none"]["turn"]["calls"] == 100  # one reply per user turn, nothing else
    assert "reflection:turn" not in rc["per_100_turns"]["memory"]
    assert payload["target_hit"]["target"] == 0.95 and isinstance(payload["target_hit"]["met"], bool)
    assert payload["mutation"] is None  # the mutation arm runs in quick and full mode only
    assert payload["splits"][0]["scenario"]["split"] == "custom"
    written = json.loads(Path(payload["file"]).read_text(encoding="utf-8"))
    assert written["curves"] == json.loads(json.dumps(payload["curves"]))

    markdown = section(payload, ctx.plots)

    assert markdown.startswith("## ")
    assert "plots/learning_curve.png" in markdown and "95" in markdown
    assert (ctx.plots / "learning_curve.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON"),
        ({k: v for k, v in TINY.items() if k != "users"}, "missing key 'users'"),
        ({**TINY, "turns_per_user": "12"}, "turns_per_user: expected an integer"),
        ({**TINY, "dialogue_length": 50}, "dialogue_length"),
        (
            {**TINY, "users": [{**TINY["users"][0], "moods": [{"at_turn": 99, "text": "累"}]}]},
            "users[0].moods[0].at_turn",
        ),
        (
            {
                **TINY,
                "users": [
                    {
                        **TINY["users"][0],
                        "preferences": [{**TINY["users"][0]["preferences"][0], "kind": "vague"}],
                    }
                ],
            },
            "users[0].preferences[0].kind",
        ),
    ],
)
def test_a_malformed_scenario_names_the_file_and_the_problem(
    tmp_path: Path, content: Any, problem: str
) -> None:
    path = write(tmp_path, content, "broken-set.json")

    with pytest.raises(InvalidInputError) as err:
        load_scenario(path)

    assert "broken-set.json" in str(err.value) and problem in str(err.value)


def test_a_missing_scenario_file_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"nowhere\.json"):
        load_scenario(tmp_path / "nowhere.json")


def test_the_bundled_people_are_split_into_test_and_dev_users_before_any_tuning() -> None:
    test, dev = (load_scenario(path) for path in DEFAULT_SCENARIOS)

    assert (test.split, dev.split) == ("test", "dev")
    assert not {u.id for u in test.users} & {u.id for u in dev.users}
    users = [*test.users, *dev.users]
    prefs = [p for u in users for p in u.preferences]
    assert len(users) >= 12 and len(prefs) >= 60
    assert {u.lang for u in test.users} == {u.lang for u in dev.users} == {"zh", "en"}
    assert all(len(p.phrasings) >= 3 and p.changes and all(len(c.phrasings) >= 2 for c in p.changes) for p in prefs)
    assert all(u.moods and u.secrets and u.chatter for u in users)
    assert all(any(p.kind == "implicit" for p in u.preferences) for u in users)
    smoke = sized(test, "smoke")
    assert (len(smoke.users), smoke.turns_per_user) == (1, 20)
    assert all(c.at_turn < 20 for p in smoke.users[0].preferences for c in p.changes)
    assert sized(test, "full") is test and sized(test, "quick") is test


def test_curve_bins_hits_and_negative_reactions_by_turn() -> None:
    records = [
        {"turn": t, "kind": kind, "hit": hit}
        for t, kind, hit in [
            (0, "question", False),
            (1, "correction", None),
            (2, "question", True),
            (3, "chitchat", None),
        ]
    ]

    points = curve(records, n=4, bins=2)

    assert [(p["turn_from"], p["turn_to"]) for p in points] == [(0, 1), (2, 3)]
    assert [p["hit_rate"] for p in points] == [0.0, 1.0]
    assert [p["negative_rate"] for p in points] == [0.5, 0.0]


def test_chat_calls_are_counted_by_purpose_and_phase() -> None:
    calls = ChatCalls(count=len)
    reply = calls.wrap(lambda messages: "{}" if purpose(messages) == "reflection" else "ok")
    reply([SystemMessage("你是天马"), HumanMessage("hi")])
    calls.set_phase("nightly")
    reply(reflection_messages([{"id": "e1", "text": "以后回答简短一点"}], []))

    result = cost(calls.calls, user_turns=50)

    assert result["totals"]["turn"] == {"calls": 1, "tokens_in": len("你是天马") + 2, "tokens_out": 2}
    assert result["totals"]["reflection:nightly"]["calls"] == 1
    assert result["learning_per_100_turns"]["calls"] == 2.0


def test_every_bundled_dev_set_loads_and_shares_no_user_with_the_test_users() -> None:
    folder = DEFAULT_SCENARIOS[0].parent
    test = load_scenario(DEFAULT_SCENARIOS[0])
    dev_sets = [load_scenario(p) for p in sorted(folder.glob("people-dev*.json"))]
    assert len(dev_sets) >= 4 and all(s.split == "dev" for s in dev_sets)
    assert all(len(s.users) == 8 for s in dev_sets)
    assert not {u.id for u in test.users} & {u.id for s in dev_sets for u in s.users}
