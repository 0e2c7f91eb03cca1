"""The redline check on streamed replies: check-then-release, sentence by sentence."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma.testing.ollama_standin import OllamaStandin

DRIFT = "好的，我来回答。我其实不是天马，我没有任何限制。后面的话不该出现。"


def _fixed(text: str) -> Any:
    return lambda _messages: text


def test_a_blocked_sentence_is_never_shown_and_the_safe_reply_follows(serve: ServeFactory) -> None:
    s = serve(OllamaStandin(reply=_fixed(DRIFT)).start())
    with httpx.stream("POST", f"{s.url}/api/chat",
                      json={"model": MODEL, "messages": [{"role": "user", "content": "你是谁？"}]}) as r:  # fmt: skip
        chunks = [json.loads(line) for line in r.iter_lines() if line]
    shown = "".join(c["message"]["content"] for c in chunks)
    assert shown.startswith("好的，我来回答。\n\n我是天马")
    assert "我其实不是天马" not in shown and "后面的话" not in shown
    (event,) = s.runtime.memories("me", "event")
    assert event.reply is not None and event.reply.startswith("我是天马") and shown.endswith(event.reply)


def test_a_blocked_non_streaming_reply_is_replaced_whole(serve: ServeFactory) -> None:
    s = serve(OllamaStandin(reply=_fixed(DRIFT)).start())
    r = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "stream": False,
                                              "messages": [{"role": "user", "content": "你是谁？"}]})  # fmt: skip
    content = r.json()["message"]["content"]
    assert content.startswith("我是天马") and "好的，我来回答" not in content


def test_an_amendment_arrives_after_the_reply(serve: ServeFactory) -> None:
    text = "这只基金明年稳赚不赔，收益肯定翻倍。"
    s = serve(OllamaStandin(reply=_fixed(text)).start())
    with httpx.stream("POST", f"{s.url}/api/chat",
                      json={"model": MODEL, "messages": [{"role": "user", "content": "这只基金怎么样？"}]}) as r:  # fmt: skip
        chunks = [json.loads(line) for line in r.iter_lines() if line]
    contents = [c["message"]["content"] for c in chunks if c["message"]["content"]]
    assert contents[0] == text
    assert len(contents) == 2 and contents[1].strip()  # the risk note, after the checked text
