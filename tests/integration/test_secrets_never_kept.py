"""Secrets are never kept: every phrasing of the corpus, through every way text gets in (a chat
turn, a chat client's history, feedback, an edit, an import, a reflection whose LLM repeats the
message), is absent from the raw bytes of every file of the data home and from every span; the
reply says tianma does not keep secrets."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel, is_reflection_prompt
from tests.home_scan import home_bytes
from tests.integration.test_reflection import T0
from tianma.guardrails.secrets import NOTICE_EN, NOTICE_ZH
from tianma.turn import ClientTurn

CORPUS = Path(__file__).parents[1] / "fixtures" / "secrets" / "secrets.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def echoing(messages: Sequence[BaseMessage]) -> str:
    """A reflection LLM that learns every message it is shown word for word (the worst case)."""
    if not is_reflection_prompt(messages):
        return "好的。"
    lines = [x for x in str(messages[-1].content).splitlines() if x.startswith("[")]
    facts = [{"key": f"note.n{i}", "content": x.split(": ", 1)[-1], "source_event_ids": [x[1:].split("]")[0]]}
             for i, x in enumerate(lines)]  # fmt: skip
    return json.dumps({"new_facts": facts}, ensure_ascii=False)


def needle(text: str, value: str) -> str:
    if not value.isdigit() and len(value) >= 6:
        return value
    start = text.index(value)
    if start == 0:  # "618204是您的登录验证码": a bare 6-digit run occurs in checkpoint timestamps' microseconds
        return text[: len(value) + 2]
    return text[max(0, start - 2) : start + len(value)]


def test_the_corpus_is_big_enough_and_in_both_languages() -> None:
    assert len(CASES) >= 40
    assert {c["lang"] for c in CASES} >= {"zh", "en"}


def test_no_secret_of_the_corpus_reaches_any_file_or_span(
    make_runtime: RuntimeFactory, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    model = ScriptedChatModel(responder=echoing)
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder(), telemetry={"capture_content": True})
    seen_by_model: list[str] = []

    def stream(messages: list[dict[str, Any]]) -> Iterator[str]:
        seen_by_model.extend(str(m.get("content")) for m in messages)
        yield "好的。"

    replies = []
    for i, case in enumerate(CASES):
        at = T0 + timedelta(minutes=i)
        turn = rt.chat("u", case["text"], dialogue_id=f"d{i // 5}", at=at)
        replies.append((case, turn.reply))
        if i % 7 == 0:  # a chat client keeps the secret in its own history and sends it again
            history = ({"role": "user", "content": case["text"]}, {"role": "assistant", "content": "ok"},
                       {"role": "user", "content": "继续"})  # fmt: skip
            rt.chat("u", "继续", dialogue_id=f"client{i}", at=at, client=ClientTurn(history, stream))
        if i % 5 == 0:
            rt.feedback(turn.event_id, "correction", text=case["text"], at=at)
    rt.ingest("u", [{"role": "user", "text": c["text"], "at": T0, "dialogue_id": "old"} for c in CASES[:10]])
    rt.reflect("u", at=T0 + timedelta(days=1))
    learnt = [r for r in rt.memories("u") if r.kind in ("fact", "preference")]
    assert learnt, "the echoing LLM learnt something (so the reflection path was exercised)"
    rt.edit(learnt[0].id, "新的内容 " + CASES[0]["text"], at=T0 + timedelta(days=2))
    rt.close()

    # a code of digits (a PIN, a CVV, an SMS code) occurs by chance in binary pages, uuids and
    # timestamps, so it is looked for with the two characters the user wrote before it ("是 738"),
    # which only a copy of the message holds
    values = [needle(c["text"], v) for c in CASES for v in c["values"]]
    files = home_bytes(tmp_path / "home")
    found = [(v, f.name) for v in values for f, blob in files if v.encode() in blob]
    assert found == []
    span_text = json.dumps([dict(s.attributes or {}) for s in spans.get_finished_spans()], ensure_ascii=False)
    assert [v for v in values if v in span_text] == []
    assert not [v for v in values if any(v in text for text in seen_by_model)]
    for case, reply in replies:
        assert (NOTICE_ZH if case["lang"] == "zh" else NOTICE_EN) in reply or (
            case["lang"] == "mixed" and (NOTICE_ZH in reply or NOTICE_EN in reply)
        ), case["id"]


def test_an_ordinary_message_gets_no_secret_notice(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder())
    turn = rt.chat("u", "忘记密码怎么办？", dialogue_id="d", at=T0)
    assert NOTICE_ZH not in turn.reply and NOTICE_EN not in turn.reply
