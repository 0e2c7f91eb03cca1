"""Forget means gone from the disk: distinctive text is written everywhere a turn, a reflection,
an edit, a span and ``tianma chat`` put it, forgotten, then searched for in the raw bytes of
every file under the home (UTF-8, JSON-escaped, any case); the forgotten message's vector too."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import BaseMessage
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel, is_reflection_prompt
from tests.home_scan import files_holding, files_holding_bytes
from tianma import Runtime
from tianma.chat_history import history_path, write_history
from tianma.storage.edge_index import EdgeVectorIndex
from tianma.telemetry.span_store import SqlSpanExporter

T0 = datetime(2026, 4, 6, 9, 0, tzinfo=UTC)
LINE = re.compile(r"^\[([0-9a-f-]{36})\] \([^)]*\) 用户: (.*)$", re.MULTILINE)
CAT = "Quillfeather"  # said in a message, learnt as a fact, edited, quoted by the reply
FOOD = "Zorblax"  # one dialogue, forgotten whole
HOME = "Glimmerwick"  # everything of the user, forgotten at the end
OTHER = "Brindlemoss"  # another user's: must survive every forget


def model() -> ScriptedChatModel:
    """Replies quote the message; reflection proposes the cat's name as a fact."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        text = str(messages[-1].content)
        return reflection(text) if is_reflection_prompt(messages) else f"好的，记下了：{text[-40:]}"

    return ScriptedChatModel(responder=respond)


def reflection(prompt: str) -> str:
    facts = [
        {"key": "pet.cat.name", "content": f"用户的猫叫 {CAT}（三岁）", "source_event_ids": [event_id]}
        for event_id, text in LINE.findall(prompt)
        if CAT in text
    ]
    empty: list[Any] = []
    return json.dumps({"new_facts": facts, "revised_preferences": empty, "new_strategies": empty,
                       "deprecated_memories": empty}, ensure_ascii=False)  # fmt: skip


def store_spans(rt: Runtime, spans: InMemorySpanExporter) -> None:
    """What serve's local span store does (``telemetry.local_store``)."""
    exporter = SqlSpanExporter(rt.settings.spans_path)
    exporter.export(spans.get_finished_spans())
    exporter.shutdown()
    spans.clear()


def test_forgotten_text_is_in_no_file_of_the_home(
    make_runtime: RuntimeFactory, spans: InMemorySpanExporter
) -> None:
    rt = make_runtime(chat_model=model(), embedder=CharacterEmbedder(), telemetry={"capture_content": True})
    home = rt.settings.home
    cat = rt.chat("u", f"我的猫叫 {CAT}，它三岁了。", dialogue_id="d1", at=T0)
    rt.chat("u", "它喜欢晒太阳。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    rt.chat("u", f"推荐 {FOOD} 牌的猫粮吗？", dialogue_id="d2", at=T0 + timedelta(hours=1))
    rt.chat("u", f"我住在 {HOME} 小区。", dialogue_id="d3", at=T0 + timedelta(hours=2))
    rt.chat("v", f"我的狗叫 {OTHER}。", dialogue_id="v1", at=T0)
    rt.reflect("u", at=T0 + timedelta(hours=3))
    (fact,) = [r for r in rt.memories("u", kind="fact") if CAT in r.content]
    rt.edit(fact.id, f"用户的猫叫 {CAT}，是只橘猫", "more detail", at=T0 + timedelta(hours=4))
    write_history(history_path(home, "u"), [f"我的猫叫 {CAT}，它三岁了。", "它喜欢晒太阳。"])
    store_spans(rt, spans)
    assert files_holding(home, CAT), "the scenario must have written the text somewhere"

    vector = rt.memory.vectors.get_vectors("u", [cat.event_id])[cat.event_id].tobytes()
    rt.memory.vectors.close()  # flushed to its segment files, as on any stop
    rt.memory.vectors = EdgeVectorIndex(rt.settings.vectors_path, rt.memory.embedder.dim)
    assert files_holding_bytes(home, vector), "the message's vector must be on disk to begin with"

    rt.forget("u", fact.id)
    rt.forget("u", cat.event_id)
    store_spans(rt, spans)
    assert files_holding(home, CAT) == []
    assert files_holding_bytes(home, vector) == []  # the vector too, not only marked deleted
    assert rt.memories("u", kind="event")  # the rest of the user is kept
    assert "它喜欢晒太阳。" in [r.content for r in rt.memories("u", kind="event")]

    assert files_holding(home, FOOD)
    assert rt.forget_dialogue("u", "d2") >= 1
    store_spans(rt, spans)
    assert files_holding(home, FOOD) == []
    assert [r.content for r in rt.memories("u", kind="event") if HOME in r.content]

    rt.forget("u")
    store_spans(rt, spans)
    assert files_holding(home, HOME) == []
    assert rt.memories("u") == []
    assert files_holding(home, OTHER)  # another user's memory is untouched
    assert [r.content for r in rt.memories("v", kind="event")] == [f"我的狗叫 {OTHER}。"]
