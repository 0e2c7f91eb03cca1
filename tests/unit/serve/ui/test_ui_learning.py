"""Strategies (weights, exploration, conflicts, rollback), reflection runs (undo), learning curves."""

from __future__ import annotations

import re
from datetime import timedelta

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, learning_model
from tests.unit.serve.ui.conftest import ClientFactory, UiClient
from tests.unit.serve.ui.seed import SETTINGS, T0, Seeded, seed_user
from tianma import Runtime
from tianma.serve import create_app
from tianma.storage.records import Provenance


def test_strategies_show_weight_trigger_exploration_and_outcomes(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    s = seeded["alice"]  # one more turn, where exploration put the strategy first
    rt.memory.store.add_injections(s.fact_turn, "alice", [{"record_id": s.strategy, "role": "strategy", "rank": 0,
                                                          "score": 0.6, "explored": 1}])  # fmt: skip
    page = client("key-a").get("/ui/strategies").text
    row = page[page.index("回答零食问题时先提醒花生过敏，再推荐") :].split("</tr>")[0]
    cells = re.findall(r'<td class="num">([^<]*)', row)
    # weight · priority · version · applied · explored · negative (the disliked turn) · mean reward
    assert cells[1:6] == ["1", "2", "2", "1", "1"] and "keywords: 零食" in row and "caution" in row
    assert "0.00 <span" in row  # one trial, reward 0 (disliked)
    assert 'data-test="rollback"' in row
    assert "推荐零食时避开花生" in page  # the pending one is listed too
    only_pending = client("key-a").get("/ui/strategies", status="pending").text
    assert "推荐零食时避开花生" in only_pending and "再推荐" not in only_pending


def test_conflicting_strategies_are_flagged(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    for content in ("回答代码问题时要简短", "回答代码问题时要详细"):
        rt.memory.store.add_record("alice", "strategy", content, Provenance(source="test"), at=T0,
                                   data={"trigger": {"domains": ["tech"]}, "priority": 0})  # fmt: skip
    page = client("key-a").get("/ui/strategies").text
    section = page[page.index("冲突 Conflicts") :].split("</section>")[0]
    assert "回答代码问题时要简短" in section and "回答代码问题时要详细" in section and "⟷" in section


def test_rolling_back_a_strategy_from_the_list(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    sid = seeded["alice"].strategy
    assert client("key-a").post(f"/ui/memories/{sid}/rollback", version="").status_code == 303
    assert rt.memory.store.get(sid).content == "回答零食问题时先提醒花生过敏"


def test_runs_list_and_detail_and_one_step_undo(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice, s = client("key-a"), seeded["alice"]
    runs = alice.get("/ui/runs").text
    assert f'href="/ui/runs/{s.run_id}"' in runs and "manual" in runs and "edit" in runs
    assert runs.count('data-test="undo"') == 2  # the reflection and the edit
    detail = alice.get(f"/ui/runs/{s.run_id}").text
    assert "用户对花生过敏" in detail and "created_pending" in detail and "（新建 new）" in detail
    done = alice.post(f"/ui/runs/{s.run_id}/undo")
    assert done.headers["location"] == f"/ui/runs/{s.run_id}?done=undone"
    after = alice.get(f"/ui/runs/{s.run_id}", done="undone").text
    assert "已撤销整次运行" in after and "b-undone" in after and "（已不存在 gone）" in after
    assert s.pending_fact not in [r.id for r in rt.memories("alice")]
    again = alice.post(f"/ui/runs/{s.run_id}/undo")
    assert again.status_code == 400 and "only a published or maintenance run" in again.text


def test_the_learning_curve_is_drawn_with_its_definitions(
    client: ClientFactory, seeded: dict[str, Seeded]
) -> None:
    page = client("key-a").get("/ui/learning").text
    assert page.count('<svg class="chart"') == 2 and page.count("<polyline") >= 2
    assert "命中率 Hit rate" in page and "÷ turns" in page and "per day" in page
    # day 1: one turn, nothing injected · day 2: one disliked turn with a strategy and a preference
    assert '<td>2026-05-05</td><td class="num">1</td><td class="num">1</td>' in page
    assert '<td>2026-05-04</td><td class="num">1</td><td class="num">0</td>' in page
    assert "100%" in page
    for days in ("30", "365", "all", "bogus"):
        assert client("key-a").get("/ui/learning", days=days).status_code == 200


def test_the_learning_page_of_a_user_without_turns(client: ClientFactory, seeded: dict[str, Seeded]) -> None:
    page = client("key-admin").get("/ui/learning", user="nobody").text
    assert "还没有对话" in page and "<svg" not in page and "命中率 Hit rate" in page


def test_times_and_days_are_shown_in_the_users_zone(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=learning_model("抱歉，我无法完成"), embedder=CharacterEmbedder(),
                      timezone="Asia/Shanghai", name="beijing", **SETTINGS)  # fmt: skip
    seed_user(rt, "alice", at=T0 + timedelta(hours=8))  # 17:00 UTC: 01:00 the next day in Beijing
    alice = UiClient(create_app(rt, scheduler=False), "key-a")
    try:
        turns = alice.get("/ui/turns").text
        assert "2026-05-05 01:00" in turns and "2026-05-04 17:00" not in turns
        assert "本地时间（Asia/Shanghai）" in turns and "Times in local time (Asia/Shanghai)" in turns
        learning = alice.get("/ui/learning").text
        assert "local days（Asia/Shanghai）" in learning
        assert '<td>2026-05-05</td><td class="num">1</td>' in learning  # the local days, not 05-04 …
        assert '<td>2026-05-06</td><td class="num">1</td>' in learning  # … and 05-05 of UTC
        assert "<td>2026-05-04</td>" not in learning
    finally:
        alice.http.close()
