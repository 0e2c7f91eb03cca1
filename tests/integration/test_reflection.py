"""The learning loop through the runtime: reflection, evidence, contradictions, undo."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel, learning_model
from tianma import InvalidInputError, Runtime
from tianma.policies.promotion import Support, decide
from tianma.storage import schema as t

T0 = datetime(2026, 4, 6, 9, 0, tzinfo=UTC)  # a Monday
EMPTY = {"new_facts": [], "revised_preferences": [], "new_strategies": [], "deprecated_memories": []}
LINE = re.compile(r"^\[([0-9a-f-]{36})\] \([^)]*\) 用户: (.*)$", re.MULTILINE)


def reflection_model(
    rules: Callable[[str, str], dict[str, list[dict[str, Any]]]] | None = None,
) -> ScriptedChatModel:
    """A scripted LLM: chat turns get "好的", reflection prompts get JSON built by ``rules``."""

    def respond(prompt: str) -> str:
        out: dict[str, list[dict[str, Any]]] = {k: [] for k in EMPTY}
        for event_id, text in LINE.findall(prompt):
            for key, items in (rules(event_id, text) if rules else {}).items():
                out[key].extend(items)
        return json.dumps(out, ensure_ascii=False)

    return learning_model(respond)


def no_llm() -> ScriptedChatModel:
    """A model whose reflection output is always unusable: only the rule-based pass remains."""
    return learning_model("抱歉，我无法完成")


def learnt(rt: Runtime, user: str = "u") -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rt.memories(user):
        if r.kind in ("fact", "preference", "strategy", "experience"):
            out.setdefault(r.status, []).append(r)
    return out


@pytest.fixture
def rt(make_runtime: RuntimeFactory) -> Runtime:
    return make_runtime(chat_model=no_llm(), embedder=CharacterEmbedder())


def test_a_stated_fact_is_pending_after_one_reflection_and_active_after_two(rt: Runtime) -> None:
    first = rt.chat("u", "我对花生过敏。", dialogue_id="d1", at=T0)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    assert report.llm["dropped"] is True  # the LLM failed: the rule pass still works
    (pending,) = learnt(rt)["pending"]
    assert pending.kind == "fact" and pending.key == "health.allergy.peanut"
    assert pending.provenance.event_ids == (first.event_id,)
    assert report.run_id in pending.provenance.reflection_ids
    assert "active" not in learnt(rt)

    again = rt.chat("u", "提醒一下，我对花生过敏", dialogue_id="d2", at=T0 + timedelta(days=1))
    rt.reflect("u", at=T0 + timedelta(days=1, hours=1))
    (active,) = learnt(rt)["active"]
    assert active.id == pending.id and active.version == 2
    assert set(active.provenance.event_ids) == {first.event_id, again.event_id}
    assert rt.history(active.id)[0].status == "pending"


def test_a_paste_teaches_nothing_by_rule_and_is_shown_cut_to_the_model(make_runtime: RuntimeFactory) -> None:
    model = no_llm()
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    story = "我对花生过敏。" + "那天她在厨房里忙了一下午，窗外一直在下雨。" * 100  # a story pasted, ~2,100 characters
    rt.chat("u", story, dialogue_id="d1", at=T0)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    assert report.llm["called"] and "pending" not in learnt(rt)  # said in a short message, it is learnt (above)
    prompt = " ".join(str(m.content) for m in model.prompts[-1])  # type: ignore[attr-defined]
    assert f"…（共 {len(story):,} 字 / {len(story):,} characters）" in prompt and story not in prompt


def test_reflecting_twice_on_the_same_messages_is_not_independent(rt: Runtime) -> None:
    rt.chat("u", "我对花生过敏。", dialogue_id="d1", at=T0)
    rt.reflect("u", at=T0 + timedelta(hours=1))
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=2))
    assert report.window_events == 0
    assert [r.status for r in rt.memories("u", kind="fact")] == ["pending"]


def test_a_correction_supersedes_and_a_scene_qualified_preference_coexists(
    make_runtime: RuntimeFactory,
) -> None:
    def rules(event_id: str, text: str) -> dict[str, list[dict[str, Any]]]:
        facts = {  # phrasings the rule pass does not catch: only the (scripted) LLM learns them
            "含糖饮料我是一口都不碰的": ("preference.diet.sugar.general", "不喜欢含糖饮料"),
            "现在含糖饮料我也照喝了": ("preference.diet.sugar.general", "喜欢喝含糖饮料"),
            "最近自己在家做低糖奶茶": ("preference.diet.milk_tea.exception", "最近迷上自制低糖奶茶"),
        }
        for said, (key, content) in facts.items():
            if said in text:
                return {"new_facts": [{"key": key, "content": content, "source_event_ids": [event_id]}]}
        return {}

    rt = make_runtime(chat_model=reflection_model(rules), embedder=CharacterEmbedder())
    for day in range(2):
        rt.chat("u", "含糖饮料我是一口都不碰的", dialogue_id=f"a{day}", at=T0 + timedelta(days=day))
        rt.reflect("u", at=T0 + timedelta(days=day, hours=1))
    (old,) = [r for r in rt.memories("u", kind="fact") if r.status == "active"]
    assert old.content == "不喜欢含糖饮料"

    rt.chat("u", "最近自己在家做低糖奶茶，停不下来", dialogue_id="b", at=T0 + timedelta(days=3))
    fix = rt.chat("u", "不对，现在含糖饮料我也照喝了", dialogue_id="b", at=T0 + timedelta(days=3, minutes=1))
    rt.reflect("u", at=T0 + timedelta(days=3, hours=1))

    facts = {r.content: r for r in rt.memories("u", kind="fact")}
    assert facts["不喜欢含糖饮料"].status == "deprecated"
    assert facts["喜欢喝含糖饮料"].status == "active"  # an explicit correction is written directly
    assert facts["最近迷上自制低糖奶茶"].status == "pending"  # coexists, waits for its own evidence
    with rt.memory.store.engine.connect() as conn:
        (log,) = conn.execute(select(t.replace_log).where(t.replace_log.c.old_id == old.id)).all()
    assert log.new_id == facts["喜欢喝含糖饮料"].id and fix.event_id in log.evidence
    turn = rt.chat("u", "推荐一款含糖饮料", dialogue_id="c", at=T0 + timedelta(days=4))
    assert old.id not in {m.id for m in turn.memories}
    assert old.id not in {h.id for h in rt.search("u", "不喜欢含糖饮料", k=5)}


def test_opposite_strategies_of_equal_priority_are_both_disabled(make_runtime: RuntimeFactory) -> None:
    def rules(event_id: str, text: str) -> dict[str, list[dict[str, Any]]]:
        trigger = {"domains": ["finance"], "keywords": ["价格"]}
        if "先给区间" in text:
            return {
                "new_strategies": [
                    {"trigger": trigger, "action": "先给价格区间", "source_event_ids": [event_id]}
                ]
            }
        if "别给区间" in text:
            return {
                "new_strategies": [
                    {"trigger": trigger, "action": "不要先给价格区间", "source_event_ids": [event_id]}
                ]
            }
        return {}

    rt = make_runtime(chat_model=reflection_model(rules), embedder=CharacterEmbedder())
    rt.chat("u", "问价格时先给区间", dialogue_id="a", at=T0)
    rt.reflect("u", at=T0 + timedelta(hours=1))
    rt.chat("u", "问价格时别给区间", dialogue_id="b", at=T0 + timedelta(days=1))
    (report,) = rt.reflect("u", at=T0 + timedelta(days=1, hours=1))
    statuses = {r.content: r.status for r in rt.memories("u", kind="strategy")}
    assert statuses == {"先给价格区间": "disabled", "不要先给价格区间": "disabled"}
    assert any(c["type"] == "strategy" for c in report.llm["contradictions"])


def test_three_same_day_moods_do_not_become_a_preference(rt: Runtime) -> None:
    for i in range(3):
        rt.chat("u", "今天别给我推贵的", dialogue_id=f"d{i}", at=T0 + timedelta(hours=i))
        rt.reflect("u", at=T0 + timedelta(hours=i, minutes=30))
    assert [r for r in rt.memories("u", kind="preference") if r.status == "active"] == []


def test_strategy_threshold() -> None:
    assert decide("strategy", Support(2, 2, 2, 0.65)).status == "pending"
    assert decide("strategy", Support(2, 2, 2, 0.75)).status == "active"
    assert decide("strategy", Support(2, 1, 1, 0.75)).status == "pending"


def dump(rt: Runtime) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    with rt.memory.store.engine.connect() as conn:
        for table in (t.records, t.record_versions, t.replace_log, t.injections, t.dialogues):
            out[table.name] = sorted(tuple(map(repr, row)) for row in conn.execute(select(table)))
    return out


def test_undo_restores_the_exact_prior_state(rt: Runtime) -> None:
    rt.chat("u", "我对花生过敏。", dialogue_id="d1", at=T0)
    rt.chat("u", "我叫王芳。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    rt.reflect("u", at=T0 + timedelta(hours=1))
    rt.chat("u", "我对花生过敏，我叫王芳", dialogue_id="d2", at=T0 + timedelta(days=1))
    before = dump(rt)
    searched = [h.id for h in rt.search("u", "花生过敏", k=5)]
    (report,) = rt.reflect("u", at=T0 + timedelta(days=1, hours=1))
    assert report.counts.get("supported", 0) >= 1
    assert dump(rt) != before

    restored = rt.undo_reflection(report.run_id)
    assert restored and dump(rt) == before
    assert [h.id for h in rt.search("u", "花生过敏", k=5)] == searched
    with pytest.raises(InvalidInputError):
        rt.undo_reflection(report.run_id)


def test_a_dry_run_writes_nothing(rt: Runtime) -> None:
    rt.chat("u", "我对花生过敏。", dialogue_id="d1", at=T0)
    before = dump(rt)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1), dry_run=True)
    assert report.counts == {"would_create": 1}
    assert dump(rt) == before


def test_decay_makes_an_idle_memory_inactive_and_a_hit_prevents_it(make_runtime: RuntimeFactory) -> None:
    from tianma.storage.records import Provenance

    rt = make_runtime(chat_model=no_llm(), embedder=CharacterEmbedder())
    said = rt.chat("u", "我家的猫叫咪咪", dialogue_id="d", at=T0)

    def fact(user: str, content: str) -> str:
        record = rt.memory.store.add_record(user, "fact", content, Provenance(event_ids=(said.event_id,), source="test"),
                                            confidence=0.7, at=T0, key=f"profile.{user}")  # fmt: skip
        rt.memory.index([record])
        return record.id

    idle, used = fact("u", "用户的猫叫咪咪"), fact("v", "用户的猫叫咪咪")
    assert rt.maintain(at=T0 + timedelta(days=29)) == []
    rt.maintain(at=T0 + timedelta(days=30))
    assert rt.memory.store.get(idle).confidence == pytest.approx(0.56)
    rt.chat("v", "我的猫叫什么？", dialogue_id="v1", at=T0 + timedelta(days=100))  # a hit on the other one
    assert rt.memory.store.get(used).last_hit_at == T0 + timedelta(days=100)
    reports = rt.maintain(at=T0 + timedelta(days=120))
    assert rt.memory.store.get(idle).status == "inactive"
    assert rt.memory.store.get(idle).confidence < 0.3
    assert rt.memory.store.get(used).status == "active"
    assert idle not in {h.id for h in rt.search("u", "猫叫咪咪", k=5)}
    assert any(idle in r.inactive for r in reports)
    rt.undo_reflection(next(r.run_id for r in reports if idle in r.inactive))
    assert rt.memory.store.get(idle).status == "active"
    assert idle in {h.id for h in rt.search("u", "猫叫咪咪", k=5)}


def test_the_reflection_graph_is_traced(rt: Runtime, spans: Any) -> None:
    rt.chat("u", "我对花生过敏。", dialogue_id="d1", at=T0)
    spans.clear()
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    finished = {s.name: s for s in spans.get_finished_spans()}
    names = ["gather", "reflect", "merge_evidence", "detect_contradictions", "score", "publish"]
    for name in names:
        assert f"tianma.reflection {name}" in finished
    assert finished["tianma.reflection gather"].attributes["tianma.reflection.window_events"] == 1
    assert finished["tianma.reflection reflect"].attributes["tianma.reflection.llm_dropped"] is True
    (decision,) = [
        e for e in finished["tianma.reflection score"].events if e.name == "tianma.reflection.decision"
    ]
    assert decision.attributes["status"] == "pending" and "content" not in decision.attributes
    assert finished["tianma.reflection publish"].attributes["tianma.reflection.run_id"] == report.run_id


def test_a_change_of_mind_under_the_same_key_supersedes_instead_of_supporting(rt: Runtime) -> None:
    for day in range(2):
        rt.chat("u", "以后回答简短一点", dialogue_id=f"a{day}", at=T0 + timedelta(days=day))
        rt.reflect("u", at=T0 + timedelta(days=day, hours=1))
    (short,) = [r for r in rt.memories("u", kind="preference") if r.status == "active"]
    rt.chat("u", "以后回答详细一点", dialogue_id="b", at=T0 + timedelta(days=3))
    rt.reflect("u", at=T0 + timedelta(days=3, hours=1))
    statuses = {r.content: r.status for r in rt.memories("u", kind="preference")}
    assert statuses[short.content] == "deprecated"
    assert [c for c, s in statuses.items() if s == "active"] == ["回答详细一点"]


def test_validated_in_three_consecutive_dialogues_becomes_a_fact(rt: Runtime) -> None:
    from tianma.storage.records import Provenance

    def resident(content: str) -> str:
        record = rt.memory.store.add_record(
            "u", "preference", content, Provenance(source="test"), confidence=0.8
        )
        return record.id

    kept, blamed = resident("回答控制在150字以内"), resident("先说结论再说细节")
    for n, text in enumerate(["讲讲量子计算", "推荐一本历史书", "怎么做红烧肉"]):
        turn = rt.chat("u", text, dialogue_id=f"d{n}", at=T0 + timedelta(days=n))
        if n == 1:
            rt.feedback(turn.event_id, "dislike")  # credited to both; then blame only one below
    with rt.memory.store.engine.begin() as conn:  # keep the dislike's blame on `blamed` only
        signals = conn.execute(select(t.records).where(t.records.c.kind == "signal")).all()
        (signal,) = [s for s in signals if s.data["type"] == "dislike"]
        conn.execute(
            t.records.update().where(t.records.c.id == signal.id)
            .values(data={**signal.data, "credited": [blamed]})
        )  # fmt: skip
    (report,) = rt.reflect("u", at=T0 + timedelta(days=3))
    assert report.counts.get("promoted") == 1
    promoted = rt.memory.store.get(kept)
    assert promoted.kind == "fact" and promoted.key is not None and promoted.version == 2
    assert "promoted to fact" in rt.history(kept)[0].change_reason
    assert rt.memory.store.get(blamed).kind == "preference"


def test_a_recurring_topic_is_written_long_term(rt: Runtime) -> None:
    texts = ["我在准备马拉松", "今天有点累", "推荐一本书", "马拉松前一周吃什么好"]
    turns = [
        rt.chat("u", text, dialogue_id="d", at=T0 + timedelta(minutes=i)) for i, text in enumerate(texts)
    ]
    rt.reflect("u", at=T0 + timedelta(hours=1))
    (topic,) = rt.memories("u", kind="experience")
    assert topic.content == "用户多次提到「马拉松」" and topic.status == "active" and topic.confidence == 0.45
    assert topic.provenance.event_ids == (turns[0].event_id, turns[3].event_id)


def test_a_mood_is_no_recurring_topic(rt: Runtime) -> None:
    texts = ["今天心情不好，推荐点轻松的电影", "你好", "推荐一本书", "今天好累，只想看轻松的电影"]
    turns = [rt.chat("u", text, dialogue_id="d", at=T0 + timedelta(minutes=i)) for i, text in enumerate(texts)]
    assert all(rt.memory.store.get(turns[i].event_id).valid_until is not None for i in (0, 3))  # moods
    rt.reflect("u", at=T0 + timedelta(hours=1))
    assert not [r for r in rt.memories("u", kind="experience") if "电影" in r.content]


def test_a_fact_that_led_to_an_action_is_written_long_term_and_a_bare_fact_is_not(rt: Runtime) -> None:
    booked = rt.chat("u", "我订了3月5日去杭州的机票", dialogue_id="d", at=T0)
    rt.chat("u", "杭州挺好的", dialogue_id="d", at=T0 + timedelta(minutes=1))
    rt.reflect("u", at=T0 + timedelta(hours=1))
    (memory,) = rt.memories("u", kind="experience")
    assert memory.content == "用户订了3月5日去杭州的机票" and memory.status == "active"
    assert memory.provenance.event_ids == (booked.event_id,)
    assert memory.importance >= 0.5
    assert memory.id in [m.id for m in rt.search("u", "我哪天去杭州？", k=3)]


def test_an_unkeyed_preference_is_superseded_by_its_opposite_in_meaning(make_runtime: RuntimeFactory) -> None:
    from tianma.storage.records import Provenance

    def rules(event_id: str, text: str) -> dict[str, list[dict[str, Any]]]:
        if "辣" in text:
            return {"revised_preferences": [{"content": "喜欢吃辣的菜", "source_event_ids": [event_id]}]}
        return {}

    rt = make_runtime(chat_model=reflection_model(rules), embedder=CharacterEmbedder())
    old = rt.memory.store.add_record(
        "u", "preference", "不喜欢吃辣的菜", Provenance(source="test"), confidence=0.8
    )
    rt.memory.index([old])
    rt.chat("u", "其实我现在挺能吃辣", dialogue_id="d", at=T0)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    assert rt.memory.store.get(old.id).status == "deprecated"
    assert any(c["type"] == "meaning" for c in report.llm["contradictions"])


def test_learnt_strategies_carry_their_zone(make_runtime: RuntimeFactory) -> None:
    def rules(event_id: str, text: str) -> dict[str, list[dict[str, Any]]]:
        trigger = {"domains": ["finance"], "keywords": ["价格"]}
        return {"new_strategies": [{"trigger": trigger, "action": "当用户问价格时，应该先给价格区间",
                                    "source_event_ids": [event_id]}]}  # fmt: skip

    rt = make_runtime(chat_model=reflection_model(rules), embedder=CharacterEmbedder())
    rt.chat("u", "价格先给个区间", dialogue_id="d", at=T0)
    rt.reflect("u", at=T0 + timedelta(hours=1))
    (strategy,) = rt.memories("u", kind="strategy")
    assert strategy.data["zone"] == "caution" and strategy.data["trigger"]["keywords"] == ["价格"]
    assert strategy.status == "pending" and strategy.confidence == 0.5


def test_the_llm_restating_a_rule_item_is_one_memory(make_runtime: RuntimeFactory) -> None:
    def rules(event_id: str, text: str) -> dict[str, list[dict[str, Any]]]:
        if "花生" in text:
            return {
                "new_facts": [
                    {"key": "health.allergies", "content": "用户对花生过敏", "source_event_ids": [event_id]}
                ]
            }
        return {}

    rt = make_runtime(chat_model=reflection_model(rules), embedder=CharacterEmbedder())
    said = rt.chat("u", "我对花生过敏。", dialogue_id="d", at=T0)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    (fact,) = rt.memories("u", kind="fact")
    assert fact.key == "health.allergy.peanut" and fact.provenance.event_ids == (said.event_id,)
    assert report.counts == {"created_pending": 1}
