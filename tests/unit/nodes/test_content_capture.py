"""With telemetry.capture_content on, every node's captured text (the chat prompt and reply, the
memory query, reflection decisions) is redacted as the stored event is: no phone number or email
of the user's message reaches any span while guardrails.pii_redaction is on, and they do when it
is off (so the check can fail)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from langchain_core.messages import BaseMessage
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel, is_reflection_prompt
from tianma.telemetry import semconv as sc

T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
PHONE, EMAIL = "13812345678", "alice@example.com"
MESSAGE = f"我的手机号是{PHONE}，邮箱 {EMAIL}，周末提醒我给她回信"
LEARNT = f"用户的联系方式：{PHONE} / {EMAIL}"
"""What the reflection LLM proposes (it may repeat PII it saw before it was redacted)."""


def respond(messages: Sequence[BaseMessage]) -> str:
    """Chat turns: the reply repeats the message. Reflection: one fact holding the PII."""
    prompt = str(messages[-1].content)
    if not is_reflection_prompt(messages):
        return f"好的：{prompt}"
    event_id = next(x[1:].split("]")[0] for x in prompt.splitlines() if x.startswith("["))
    fact = {"key": "user.contact", "content": LEARNT, "source_event_ids": [event_id]}
    empty: list[object] = []
    return json.dumps({"new_facts": [fact], "revised_preferences": empty, "new_strategies": empty,
                       "deprecated_memories": empty}, ensure_ascii=False)  # fmt: skip


def everything_in(spans: Sequence[ReadableSpan]) -> str:
    """Every attribute and event attribute of every span, as one text."""
    return json.dumps(
        [
            [s.name, dict(s.attributes or {}), [[e.name, dict(e.attributes or {})] for e in s.events]]
            for s in spans
        ],
        ensure_ascii=False,
    )


@pytest.mark.parametrize("pii_redaction", [True, False])
def test_pii_of_the_message_reaches_spans_only_with_redaction_off(
    make_runtime: RuntimeFactory, spans: InMemorySpanExporter, pii_redaction: bool
) -> None:
    rt = make_runtime(
        chat_model=ScriptedChatModel(responder=respond),
        embedder=CharacterEmbedder(),
        telemetry={"capture_content": True},
        guardrails={"pii_redaction": pii_redaction},
    )
    rt.chat("u", MESSAGE, dialogue_id="d", at=T0)
    # a short follow-up is searched together with the previous message
    rt.chat("u", "那周日呢？", dialogue_id="d", at=T0 + timedelta(minutes=1))
    rt.reflect("u", at=T0 + timedelta(hours=1))
    finished = spans.get_finished_spans()

    chats = [s for s in finished if s.name == "chat scripted" and s.attributes]
    retrieves = [s for s in finished if s.name == sc.NODE_SPAN_PREFIX + "retrieve"]
    decisions = [e for s in finished for e in s.events if e.name == "tianma.reflection.decision"]
    queries = [dict(s.attributes or {}).get(sc.GEN_AI_MEMORY_QUERY_TEXT) for s in retrieves]
    contents = [dict(e.attributes or {}).get("content") for e in decisions]
    captured = {
        "chat": everything_in(chats),
        "query": json.dumps(queries, ensure_ascii=False),
        "decision": json.dumps(contents, ensure_ascii=False),
    }
    assert len(retrieves) == 2 and decisions  # each path was taken
    for where, text in captured.items():
        for value in (PHONE, EMAIL):
            assert (value in text) is not pii_redaction, (where, value)
    leaked = [v for v in (PHONE, EMAIL) if v in everything_in(finished)]
    assert leaked == ([] if pii_redaction else [PHONE, EMAIL])
    if pii_redaction:
        assert "[手机号/phone]" in captured["chat"] and "[邮箱/email]" in captured["query"]
