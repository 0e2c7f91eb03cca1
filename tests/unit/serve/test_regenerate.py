"""Regenerate: a request with exactly the history and message of an earlier turn replaces that
turn's reply — one event, the new reply, a weak ``regenerate`` signal on the old one."""

from __future__ import annotations

from typing import Any

import httpx

from tests.unit.serve.conftest import MODEL, Served, ServeFactory
from tianma.testing.ollama_standin import OllamaStandin


def _chat(s: Served, messages: list[dict[str, Any]], chat: str | None = None) -> httpx.Response:
    headers = {"X-OpenWebUI-Chat-Id": chat} if chat else {}
    r = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "messages": messages, "stream": False}, timeout=30,
                   headers=headers)
    assert r.status_code == 200, r.text
    return r


def test_regenerate_replaces_the_reply_of_the_same_event(serve: ServeFactory) -> None:
    replies = iter(["第一个回答。", "第二个回答。", "另一个聊天。", "好的。"])
    standin = OllamaStandin(reply=lambda _m: next(replies)).start()
    s = serve(standin)
    try:
        asked = [{"role": "user", "content": "推荐一本关于天文的书"}]
        first = _chat(s, asked, "chat-1")
        again = _chat(s, asked, "chat-1")  # the regenerate button: same history, same message, same chat
        assert again.headers["x-tianma-event-id"] == first.headers["x-tianma-event-id"]
        assert again.headers["x-tianma-dialogue-id"] == first.headers["x-tianma-dialogue-id"]
        (event,) = s.runtime.memories("me", "event")
        assert (event.id, event.reply) == (first.headers["x-tianma-event-id"], "第二个回答。")
        assert _chat(s, asked, "chat-2").headers["x-tianma-event-id"] != event.id  # another chat: a new turn
        assert len(s.runtime.memories("me", "event")) == 2
        (signal,) = s.runtime.memories("me", "signal")
        assert (signal.data.get("type"), signal.data.get("target_event_id"), signal.confidence) == (
            "regenerate", event.id, 0.3)
        nxt = _chat(s, [*asked, {"role": "assistant", "content": "第二个回答。"}, {"role": "user", "content": "谢谢"}],
                    "chat-1")
        assert nxt.headers["x-tianma-dialogue-id"] == first.headers["x-tianma-dialogue-id"]
        assert len(s.runtime.memories("me", "event")) == 3
    finally:
        standin.close()


def test_a_first_message_again_without_a_conversation_id_is_a_new_chat(serve: ServeFactory) -> None:
    s = serve()
    first = _chat(s, [{"role": "user", "content": "你好"}])
    again = _chat(s, [{"role": "user", "content": "你好"}])
    assert again.headers["x-tianma-event-id"] != first.headers["x-tianma-event-id"]
    assert len(s.runtime.memories("me", "event")) == 2


def test_asking_the_same_thing_again_after_the_reply_is_a_new_turn(serve: ServeFactory) -> None:
    s = serve()
    asked = [{"role": "user", "content": "几点了"}]
    first = _chat(s, asked)
    second = _chat(s, [*asked, {"role": "assistant", "content": first.json()["message"]["content"]}, *asked])
    assert second.headers["x-tianma-event-id"] != first.headers["x-tianma-event-id"]
    assert len(s.runtime.memories("me", "event")) == 2
    assert all(sig.data.get("type") != "regenerate" for sig in s.runtime.memories("me", "signal"))
