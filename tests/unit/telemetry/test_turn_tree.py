"""A turn's decision tree, rebuilt from the spans a real Runtime turn wrote to the local store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma.errors import ChatModelUnavailableError
from tianma.settings import NODE_NAMES
from tianma.storage.records import Provenance
from tianma.telemetry import semconv as sc
from tianma.telemetry.span_store import TURN_SPAN_NAME, SpanStore, SqlSpanExporter
from tianma.telemetry.turn_tree import SignalSeen, turn_tree

T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


class _Relay(SpanProcessor):
    """Added once to the tests' global provider (it can only be set once per process): passes
    finished spans to the processor of the running test, if any."""

    def __init__(self) -> None:
        self.target: SpanProcessor | None = None

    def on_end(self, span: ReadableSpan) -> None:
        target = self.target
        if target is not None:
            target.on_end(span)


_RELAY = _Relay()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SpanStore]:
    """Every span of this test goes to a SimpleSpanProcessor(SqlSpanExporter) in tmp_path."""
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    if _RELAY not in provider._active_span_processor._span_processors:
        provider.add_span_processor(_RELAY)
    path = tmp_path / "spans.db"
    processor = SimpleSpanProcessor(SqlSpanExporter(path))
    _RELAY.target = processor
    yield SpanStore(path)
    _RELAY.target = None
    processor.shutdown()


def add_strategy(rt: Any, user: str, content: str, **data: Any) -> str:
    record = rt.memory.store.add_record(
        user, "strategy", content, Provenance(source="test"), confidence=0.8, data=data, at=T0
    )
    return str(record.id)


def test_a_real_turn_reads_back_as_its_decision_tree(make_runtime: RuntimeFactory, store: SpanStore) -> None:
    rt = make_runtime(
        chat_model=ScriptedChatModel(replies=["好的。"]),
        embedder=CharacterEmbedder(),
        policies={"epsilon": 1.0, "seed": 3},
    )
    first = add_strategy(rt, "u", "回答饮品问题时先说结论", trigger={"keywords": ["喝"]}, priority=2)
    second = add_strategy(rt, "u", "回答饮品问题时给出两个选项", trigger={"keywords": ["喝"]}, priority=1)
    pref = rt.memory.store.add_record(
        "u", "preference", "回答简短", Provenance(source="test"), confidence=0.9
    )
    stated = rt.chat("u", "早上喝黑咖啡还是喝茶好？", dialogue_id="d1", at=T0)
    turn = rt.chat("u", "我早上喝什么？", dialogue_id="d2", at=T0 + timedelta(days=1))
    after = rt.chat("u", "不对，我是问早上喝的东西", dialogue_id="d2", at=T0 + timedelta(days=1, minutes=1))

    tree = turn_tree(store, turn.event_id)
    assert tree is not None
    assert (tree.event_id, tree.trace_id, tree.user_id, tree.conversation_id) == (
        turn.event_id,
        turn.trace_id,
        "u",
        "d2",
    )
    assert tree.root.name == TURN_SPAN_NAME and tree.status != "ERROR" and tree.errors == ()
    assert tree.error is None and tree.duration_ms > 0
    assert [n.name for n in tree.nodes] == list(NODE_NAMES)
    assert all(n.duration_ms >= 0 and n.offset_ms >= 0 for n in tree.nodes)
    assert [n.offset_ms for n in tree.nodes] == sorted(n.offset_ms for n in tree.nodes)
    assert sum(n.duration_ms for n in tree.nodes) <= tree.duration_ms

    # memories: retrieved → kept → injected, the same as the turn says
    assert turn.memories, "the first message should be found again"
    assert tree.memories.injected == tuple(m.id for m in turn.memories)
    assert [k.id for k in tree.memories.kept] == [m.id for m in turn.memories]
    assert [k.score for k in tree.memories.kept] == pytest.approx([m.score for m in turn.memories])
    retrieved = {r.id: r.score for r in tree.memories.retrieved}
    assert stated.event_id in retrieved and retrieved[stated.event_id] is not None
    assert tree.memories.dropped_count == len(tree.memories.retrieved) - len(tree.memories.kept)
    assert tree.memories.prompt_items is not None and tree.memories.prompt_items >= len(turn.memories)

    # strategies, exploration, preferences
    assert tree.preferences == (pref.id,)
    assert tree.strategies.applied == tuple(s.id for s in turn.strategies)
    exploration = tree.strategies.exploration
    assert exploration is not None and exploration.explored and exploration.epsilon == 1.0
    assert exploration.skipped == first
    assert exploration.alternative == next((s.id for s in turn.strategies if s.explored), None)
    assert exploration.alternative in {second, None}
    assert tree.strategies.conflicts == ()

    # the model call, the redline check, the event
    assert tree.chat is not None and tree.chat.request_model == "scripted"
    assert tree.chat.input_tokens and tree.chat.input_tokens > 0 and tree.chat.finish_reasons == ("stop",)
    assert tree.chat.status != "ERROR" and tree.chat.error is None
    generate = tree.node("generate")
    assert generate is not None and tree.chat.span_name in [c.name for c in generate.children]
    assert tree.redline is not None and turn.redline is not None and tree.redline.verdict == turn.redline.verdict
    assert tree.redline.rules == turn.redline.rules
    assert tree.domain == "food" and tree.folded_turns == 0
    capture = tree.node("capture_signals")
    assert capture is not None and capture.attributes[sc.TIANMA_EVENT_ID] == turn.event_id

    # the next turn's correction is a signal about this one
    later = turn_tree(store, after.event_id)
    assert later is not None and after.signals
    assert later.signals == tuple(SignalSeen(s.type, s.target_event_id) for s in after.signals)
    assert SignalSeen("correction", turn.event_id) in later.signals

    rows = store.recent_turns("u", limit=10)
    assert [r.event_id for r in rows] == [after.event_id, turn.event_id, stated.event_id]
    assert [r.conversation_id for r in rows] == ["d2", "d2", "d1"]
    assert store.recent_turns("someone else", limit=10) == []


def test_redline_rules_are_in_the_tree(make_runtime: RuntimeFactory, store: SpanStore) -> None:
    model = ScriptedChatModel(replies=["这只基金明年收益一定有20%。"])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    rule = add_strategy(
        rt,
        "u",
        "财务类问题不要给确定性收益预测",
        redline={"domains": ["finance"], "action": "append", "text": "⚠️ 投资有风险，以上不构成收益承诺。"},
    )
    turn = rt.chat("u", "这只基金收益怎么样？", dialogue_id="d", at=T0)
    tree = turn_tree(store, turn.event_id)
    assert tree is not None and tree.redline is not None and turn.redline is not None
    assert (
        (tree.redline.verdict, tree.redline.rules)
        == ("amended", (rule,))
        == (turn.redline.verdict, turn.redline.rules)
    )
    assert tree.domain == "finance"
    assert tree.strategies.exploration is not None and not tree.strategies.exploration.explored


def test_a_failed_model_call_shows_as_an_error(make_runtime: RuntimeFactory, store: SpanStore) -> None:
    model = ScriptedChatModel(replies=[RuntimeError("boom")])
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder())
    with pytest.raises(ChatModelUnavailableError) as caught:
        rt.chat("u", "你好", dialogue_id="d", at=T0)
    tree = turn_tree(store, caught.value.event_id)
    assert tree is not None and tree.chat is not None
    assert tree.chat.status == "ERROR" and tree.chat.error is not None and "boom" in tree.chat.error
    assert [e.span_name for e in tree.errors] == [tree.chat.span_name]
    assert tree.errors[0].error_type == "RuntimeError"
    assert tree.error is not None and "boom" in tree.error


def test_unknown_events_and_bare_plugin_nodes(tmp_path: Path) -> None:
    """A node without the built-in attributes gives empty parts, not errors."""
    path = tmp_path / "spans.db"
    exporter = SqlSpanExporter(path)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("request"), tracer.start_as_current_span(TURN_SPAN_NAME) as root:
        root.set_attribute(sc.GEN_AI_CONVERSATION_ID, "d")
        with tracer.start_as_current_span(sc.NODE_SPAN_PREFIX + "capture_signals") as node:
            node.set_attribute(sc.TIANMA_NODE_NAME, "capture_signals")
            node.set_attribute(sc.TIANMA_EVENT_ID, "ev")
    provider.shutdown()
    store = SpanStore(path)
    assert turn_tree(store, "missing") is None
    tree = turn_tree(store, "ev")
    assert tree is not None and tree.root.name == TURN_SPAN_NAME  # not the request span above it
    assert [n.name for n in tree.nodes] == ["capture_signals"] and tree.conversation_id == "d"
    assert tree.memories.retrieved == tree.memories.kept == () and tree.memories.injected == ()
    assert tree.strategies.applied == () and tree.strategies.exploration is None
    assert tree.chat is None and tree.redline is None and tree.signals == () and tree.user_id is None
