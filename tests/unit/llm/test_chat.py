"""call_chat's span: content only when captured, each text as ``capture`` makes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tianma.llm.chat import call_chat
from tianma.llm.scripted import ScriptedChatModel
from tianma.settings import Settings
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import content_capture

PHONE, EMAIL = "13812345678", "alice@example.com"
MESSAGE = f"我的手机号是{PHONE}，邮箱 {EMAIL}，周末提醒我给她回信"


def echo(messages: Sequence[BaseMessage]) -> str:
    """A model that repeats the user's message in its reply."""
    return f"好的，已记录：{messages[-1].content}"


def chat_span(spans: InMemorySpanExporter, pii_redaction: bool, capture: bool = True) -> dict[str, Any]:
    settings = Settings(telemetry={"capture_content": capture}, guardrails={"pii_redaction": pii_redaction})
    model = ScriptedChatModel(responder=echo)
    result = call_chat(
        model, [SystemMessage("你是助理。"), HumanMessage(MESSAGE)], capture=content_capture(settings)
    )
    assert PHONE in result.text  # the caller gets the reply as the model wrote it
    (span,) = [s for s in spans.get_finished_spans() if s.name == "chat scripted"]
    return dict(span.attributes or {})


@pytest.mark.parametrize("pii_redaction", [True, False])
def test_captured_messages_and_reply_are_redacted_when_pii_redaction_is_on(
    spans: InMemorySpanExporter, pii_redaction: bool
) -> None:
    attrs = chat_span(spans, pii_redaction)
    captured = [*attrs[sc.GEN_AI_INPUT_MESSAGES], *attrs[sc.GEN_AI_OUTPUT_MESSAGES]]
    assert captured[0] == "你是助理。"
    for value in (PHONE, EMAIL):
        assert any(value in text for text in captured) is not pii_redaction
    if pii_redaction:
        assert "[手机号/phone]" in captured[1] and "[邮箱/email]" in captured[2]


def test_no_content_without_capture(spans: InMemorySpanExporter) -> None:
    attrs = chat_span(spans, pii_redaction=False, capture=False)
    assert sc.GEN_AI_INPUT_MESSAGES not in attrs and sc.GEN_AI_OUTPUT_MESSAGES not in attrs
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "chat"
