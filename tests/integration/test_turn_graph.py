"""The six-node graph: order, spans with decision attributes, node swap, strategies, redlines."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma import plugins
from tianma.errors import PluginNotFoundError
from tianma.graph.build import build_turn_graph
from tianma.settings import NODE_NAMES, NodeSettings
from tianma.storage.records import Provenance
from tianma.telemetry import semconv as sc
from tianma.turn import RedlineVerdict

T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


def test_exactly_six_nodes_in_order() -> None:
    graph = build_turn_graph(NodeSettings()).get_graph()
    edges = {(e.source, e.target) for e in graph.edges}
    chain = ["__start__", *NODE_NAMES, "__end__"]
    assert edges == set(itertools.pairwise(chain))


def test_every_node_is_a_span_with_its_decision(
    make_runtime: RuntimeFactory, spans: InMemorySpanExporter
) -> None:
    rt = make_runtime()
    stated = rt.chat("u", "早上喝黑咖啡还是喝茶好？", dialogue_id="d1", at=T0)
    spans.clear()
    turn = rt.chat("u", "我早上喝什么？", dialogue_id="d2", at=T0 + timedelta(days=1))

    finished = {s.name: s for s in spans.get_finished_spans()}
    root = finished[f"invoke_agent {sc.AGENT_NAME}"]
    assert root.attributes[sc.GEN_AI_CONVERSATION_ID] == "d2"
    assert format(root.context.trace_id, "032x") == turn.trace_id
    for name in NODE_NAMES:
        span = finished[sc.NODE_SPAN_PREFIX + name]
        assert span.parent is not None and span.context.trace_id == root.context.trace_id
        assert span.attributes[sc.TIANMA_NODE_NAME] == name
    retrieve = finished["tianma.node retrieve"].attributes
    rerank = finished["tianma.node rerank"].attributes
    assert stated.event_id in retrieve[sc.TIANMA_RETRIEVED_IDS]
    assert list(rerank[sc.TIANMA_KEPT_IDS]) == [m.id for m in turn.memories]
    assert len(rerank[sc.TIANMA_KEPT_SCORES]) == len(turn.memories)
    assert finished["tianma.node load_strategies"].attributes[sc.TIANMA_DOMAIN] == "food"
    redline = finished["tianma.node redline_check"]
    assert redline.attributes[sc.TIANMA_REDLINE_VERDICT] == "pass"
    assert redline.events[0].name == sc.GEN_AI_GUARDRAIL_EVENT
    assert finished["tianma.node capture_signals"].attributes[sc.TIANMA_EVENT_ID] == turn.event_id
    chat = finished["chat scripted"]
    assert chat.attributes[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert chat.attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted"
    assert chat.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] > 0
    assert sc.GEN_AI_INPUT_MESSAGES not in chat.attributes
    assert any(s.name.startswith("embeddings ") for s in spans.get_finished_spans())


def test_content_is_in_spans_only_when_asked(
    make_runtime: RuntimeFactory, spans: InMemorySpanExporter
) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), telemetry={"capture_content": True})
    rt.chat("u", "秘密内容", dialogue_id="d", at=T0)
    chat = next(s for s in spans.get_finished_spans() if s.name == "chat scripted")
    assert any("秘密内容" in m for m in chat.attributes[sc.GEN_AI_INPUT_MESSAGES])


def keep_one(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    """A replacement rerank: only the single most relevant candidate."""
    best = sorted(state.get("candidates", []), key=lambda c: -c["relevance"])[:1]
    return {
        "memories": [
            {
                "id": c["record"]["id"],
                "kind": c["record"]["kind"],
                "content": "SWAPPED",
                "score": 1.0,
                "source_event_ids": [c["record"]["id"]],
                "at": None,
            }
            for c in best
        ]
    }


def test_a_node_is_swapped_by_settings(make_runtime: RuntimeFactory, spans: InMemorySpanExporter) -> None:
    plugins.nodes.register("keep_one", keep_one)
    model = ScriptedChatModel(replies=["好"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder(), nodes={"rerank": "keep_one"})
    for i in range(4):
        rt.chat("u", f"帮我看看蓝色的东西{i}号", dialogue_id="d1", at=T0 + timedelta(minutes=i))
    turn = rt.chat("u", "什么颜色的东西好看", dialogue_id="d2", at=T0 + timedelta(days=1))
    assert [m.content for m in turn.memories] == ["SWAPPED"]
    assert "SWAPPED" in str(model.prompts[-1][0].content)
    assert any(s.name == "tianma.node rerank" for s in spans.get_finished_spans())


def test_a_node_by_import_path_and_unknown_names() -> None:
    graph = build_turn_graph(NodeSettings(rerank="tianma.nodes.rerank:rerank"))
    assert "rerank" in graph.get_graph().nodes
    with pytest.raises(PluginNotFoundError, match=r"available: .*capture_signals"):
        build_turn_graph(NodeSettings(rerank="no_such_node"))


def add_strategy(rt: Any, user: str, content: str, **data: Any) -> str:
    record = rt.memory.store.add_record(
        user, "strategy", content, Provenance(source="test"), confidence=0.8, data=data, at=T0
    )
    return str(record.id)


def test_strategies_load_by_trigger_and_preferences_are_resident(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["好的"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder(), policies={"epsilon": 0.0})
    price = add_strategy(
        rt,
        "u",
        "当用户问价格时，应该先给价格区间，再问是否需要细节",
        trigger={"keywords": ["价格", "多少钱"]},
        priority=1,
        weight=0.8,
    )
    night = add_strategy(rt, "u", "22点后回答尽量简洁", trigger={"hours": [22, 6]})
    add_strategy(rt, "other", "别人的策略")
    rt.memory.store.add_record(
        "u", "preference", "回答控制在150字以内", Provenance(source="test"), confidence=0.9
    )

    turn = rt.chat("u", "这台相机多少钱？", dialogue_id="d", at=T0)
    assert [s.id for s in turn.strategies] == [price] and not turn.strategies[0].explored
    assert turn.preferences == ("回答控制在150字以内",)
    system = str(model.prompts[-1][0].content)
    assert "【历史有效策略】" in system and "先给价格区间" in system and "别人的策略" not in system

    late = rt.chat("u", "讲个笑话", dialogue_id="d", at=T0.replace(hour=23))
    assert [s.id for s in late.strategies] == [night]


def test_hour_triggers_and_prompt_dates_are_in_the_users_time_zone(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["好的"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder(), policies={"epsilon": 0.0},
                      timezone="Asia/Shanghai")  # fmt: skip
    night = add_strategy(rt, "u", "22点后回答尽量简洁", trigger={"hours": [22, 6]})
    evening = datetime(2026, 5, 4, 15, 30, tzinfo=UTC)  # 23:30 in Beijing, 15:30 UTC
    assert [s.id for s in rt.chat("u", "讲个笑话", dialogue_id="d", at=evening).strategies] == [night]
    noon_utc = datetime(2026, 5, 5, 12, 0, tzinfo=UTC)  # 20:00 in Beijing: not late there
    assert rt.chat("u", "再讲一个", dialogue_id="d", at=noon_utc).strategies == ()
    stated = make_runtime(chat_model=model, timezone="Asia/Shanghai", name="stated")  # the real embedder
    stated.chat("u", "今天别给我推贵的", dialogue_id="a", at=evening)
    stated.chat("u", "推荐一款耳机", dialogue_id="b", at=evening + timedelta(minutes=10))
    system = str(model.prompts[-1][0].content)  # valid until local midnight, shown in local time
    assert "（2026-05-04，有效至 / valid until 2026-05-05 00:00）：「今天别给我推贵的」" in system


def test_redline_amends_a_finance_reply_and_passes_others(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["这只基金明年收益一定有20%。"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    rule = add_strategy(
        rt,
        "u",
        "财务类问题不要给确定性收益预测",
        redline={"domains": ["finance"], "action": "append", "text": "⚠️ 投资有风险，以上不构成收益承诺。"},
    )
    turn = rt.chat("u", "这只基金收益怎么样？", dialogue_id="d", at=T0)
    assert turn.reply.endswith("⚠️ 投资有风险，以上不构成收益承诺。")
    assert turn.redline == RedlineVerdict("amended", (rule,), ("⚠️ 投资有风险，以上不构成收益承诺。",))
    assert rule not in {s.id for s in turn.strategies}
    calm = rt.chat("u", "今天晚饭吃什么", dialogue_id="d", at=T0)
    assert calm.redline is not None and calm.redline.verdict == "pass" and calm.reply == "这只基金明年收益一定有20%。"


def test_a_resident_preference_is_not_injected_twice(make_runtime: RuntimeFactory) -> None:
    model = ScriptedChatModel(replies=["好的"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    pref = rt.memory.store.add_record(
        "u", "preference", "回答控制在150字以内", Provenance(source="test"), confidence=0.9, at=T0
    )
    rt.memory.index([pref])
    assert [h.id for h in rt.search("u", "回答控制在150字以内吗", k=1)] == [pref.id]
    turn = rt.chat("u", "回答控制在150字以内吗", dialogue_id="d", at=T0)
    assert turn.preferences == ("回答控制在150字以内",)
    assert pref.id not in {m.id for m in turn.memories}
    assert str(model.prompts[-1][0].content).count("回答控制在150字以内") == 1


def test_the_shipped_alternatives_fill_their_slots_and_the_span_names_them(
    make_runtime: RuntimeFactory, spans: InMemorySpanExporter
) -> None:
    reply = "这只基金明年一定能涨30%，稳赚。"
    rt = make_runtime(chat_model=ScriptedChatModel(replies=[reply]), embedder=CharacterEmbedder(),
                      nodes={"rerank": "rerank_mmr", "retrieve": "retrieve_keyword", "redline_check": "redline_noop"})  # fmt: skip
    rt.chat("u", "早上喝黑咖啡还是喝茶好？", dialogue_id="d1", at=T0)
    turn = rt.chat("u", "这只基金怎么样，早上喝什么", dialogue_id="d2", at=T0 + timedelta(days=1))
    assert turn.reply == reply and turn.redline is not None and turn.redline.verdict == "pass"  # not amended
    impl = {s.attributes[sc.TIANMA_NODE_NAME]: s.attributes[sc.TIANMA_NODE_IMPL]
            for s in spans.get_finished_spans() if s.attributes and sc.TIANMA_NODE_NAME in s.attributes}  # fmt: skip
    assert impl["rerank"] == "rerank_mmr" and impl["retrieve"] == "retrieve_keyword" and impl["generate"] == "builtin"
    assert [m.content for m in turn.memories] == ["早上喝黑咖啡还是喝茶好？"]


def test_one_channel_alone_carries_the_whole_relevance(make_runtime: RuntimeFactory) -> None:
    from tianma.memory.search import hybrid_search

    rt = make_runtime(embedder=CharacterEmbedder())
    rt.chat("u", "我每天早上喝黑咖啡。", dialogue_id="d1", at=T0)
    vector = rt.memory.embedder.embed_query("早上喝什么")
    for channels, allowed in ((frozenset({"dense"}), {"dense"}), (frozenset({"keyword"}), {"keyword", "fact"})):
        found = hybrid_search(rt.memory, rt._anchors, "u", "早上喝什么", vector, 10, channels=channels)
        assert found and all(set(c.channels) <= allowed for c in found), channels
    both = hybrid_search(rt.memory, rt._anchors, "u", "早上喝什么", vector, 10)
    assert {ch for c in both for ch in c.channels} >= {"dense", "keyword"}


def test_a_reflection_slot_is_swapped_by_settings_but_its_guard_is_not(make_runtime: RuntimeFactory,
                                                                       spans: InMemorySpanExporter) -> None:  # fmt: skip
    from pydantic import ValidationError

    from tianma import Settings
    from tianma.nodes import reflection as builtin

    scored: list[int] = []

    def counting_score(state: Any, runtime: Any) -> Any:
        scored.append(len(state.get("plan", [])))
        return builtin.score(state, runtime)

    plugins.nodes.register("counting_score", counting_score)
    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的"]), embedder=CharacterEmbedder(),
                      nodes={"reflection": {"score": "counting_score"}})  # fmt: skip
    rt.chat("u", "以后回答先给结论。", dialogue_id="d1", at=T0)
    (report,) = rt.reflect("u", at=T0 + timedelta(hours=1))
    assert scored and report.run_id
    impl = {s.attributes[sc.TIANMA_NODE_NAME]: s.attributes[sc.TIANMA_NODE_IMPL] for s in spans.get_finished_spans()
            if s.name.startswith("tianma.reflection ") and s.attributes}  # fmt: skip
    assert impl["score"] == "counting_score" and impl["gather"] == "builtin" and impl["guard"] == "builtin"
    with pytest.raises(ValidationError, match="guard"):
        Settings(nodes={"reflection": {"guard": "counting_score"}})  # the guardrails are no slot


def test_search_reads_the_channels_and_diversity_settings_as_turns_do(make_runtime: RuntimeFactory) -> None:
    said = ["我每天早上喝黑咖啡。", "我每天早上喝黑咖啡，不加糖。", "我周末去爬山。"]
    results = {}
    for channels, diversity in (("hybrid", 0.0), ("keyword", 0.0), ("dense", 0.0), ("hybrid", 0.9)):
        rt = make_runtime(embedder=CharacterEmbedder(), name=f"{channels}-{diversity}",
                          retrieval={"channels": channels, "diversity": diversity})  # fmt: skip
        for i, text in enumerate(said):
            rt.chat("u", text, dialogue_id=f"d{i}", at=T0 + timedelta(minutes=i))
        results[(channels, diversity)] = [m.content for m in rt.search("u", "早上喝什么咖啡", k=2, at=T0 + timedelta(days=1))]
    assert results[("hybrid", 0.0)][:2] == said[:2]  # the two coffee statements
    assert "我周末去爬山。" not in results[("keyword", 0.0)]  # no shared word: the keyword channel never finds it
    assert results[("dense", 0.0)]  # the dense channel alone finds something
    assert results[("hybrid", 0.9)][1] == "我周末去爬山。"  # diversity: the near copy gives way to something else
