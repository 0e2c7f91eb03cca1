"""“Continue” and the answer after a tool round belong to the turn they continue."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tests.unit.serve.conftest import MODEL, Served, ServeFactory
from tianma.serve.continuations import answer_text
from tianma.testing.ollama_standin import OllamaStandin


def _post(s: Served, path: str, messages: list[dict[str, Any]], stream: bool = False) -> httpx.Response:
    r = httpx.post(f"{s.url}{path}", json={"model": MODEL, "messages": messages, "stream": stream}, timeout=30)
    assert r.status_code == 200, r.text
    return r


def _reply_becomes(s: Served, text: str) -> None:
    """The reply is recorded after the answer was sent: wait for it."""
    deadline = time.monotonic() + 10
    while [e.reply for e in s.runtime.memories("me", "event")] != [text]:
        assert time.monotonic() < deadline, [e.reply for e in s.runtime.memories("me", "event")]
        time.sleep(0.02)


def _scripted(*replies: str) -> OllamaStandin:
    it = iter(replies)
    return OllamaStandin(reply=lambda _m: next(it)).start()


def test_continue_grows_the_reply_of_its_turn_and_keeps_the_dialogue(serve: ServeFactory) -> None:
    standin = _scripted("第一部分。", "第二部分。", "不客气。")
    s = serve(standin)
    try:
        asked = [{"role": "user", "content": "讲讲长城的历史"}]
        first = _post(s, "/api/chat", asked)
        _post(s, "/api/chat", [*asked, {"role": "assistant", "content": "第一部分。"}], stream=True)  # “continue”
        _reply_becomes(s, "第一部分。第二部分。")
        after = [*asked, {"role": "assistant", "content": "第一部分。第二部分。"}, {"role": "user", "content": "谢谢"}]
        nxt = _post(s, "/api/chat", after)
        assert nxt.headers["x-tianma-dialogue-id"] == first.headers["x-tianma-dialogue-id"]
    finally:
        standin.close()


def test_the_answer_after_a_tool_round_is_the_turns_reply(serve: ServeFactory) -> None:
    standin = _scripted("", "北京今天22度，晴。")
    s = serve(standin)
    try:
        asked = [{"role": "user", "content": "北京天气怎么样"}]
        _post(s, "/api/chat", asked)
        call = {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "weather", "arguments": {"city": "北京"}}}]}  # fmt: skip
        _post(s, "/api/chat", [*asked, call, {"role": "tool", "content": "22°C sunny", "tool_name": "weather"}])
        _reply_becomes(s, "北京今天22度，晴。")
    finally:
        standin.close()


def test_an_unknown_continuation_records_nothing(serve: ServeFactory) -> None:
    s = serve()
    _post(s, "/api/chat", [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "从没说过的话"}])
    assert s.runtime.memories("me", "event") == []


def test_answer_text_reads_both_apis() -> None:
    ndjson = b"".join(json.dumps({"message": {"content": c}}).encode() + b"\n" for c in ("a", "b"))
    sse = b"".join(b"data: " + json.dumps({"choices": [{"delta": {"content": c}}]}).encode() + b"\n\n" for c in "cd")
    assert (answer_text(ndjson), answer_text(sse + b"data: [DONE]\n\n")) == ("ab", "cd")
    assert answer_text(json.dumps({"choices": [{"message": {"content": "whole"}}]}).encode()) == "whole"
