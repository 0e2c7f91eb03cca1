"""The stop button: a client that goes away mid-reply stops the model, and the turn keeps what it saw."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import httpx

from tests.unit.serve.conftest import MODEL, Served, ServeFactory
from tianma.serve import create_app
from tianma.testing.ollama_standin import OllamaStandin
from tianma.testing.server import ServerThread

LONG = "".join(f"第{i}句话讲的是路由器的第{i}个设置。" for i in range(1, 80))


def _long(_messages: list[dict[str, Any]]) -> str:
    return LONG


def _stop_after(s: Served, chunks: int, messages: list[dict[str, Any]]) -> tuple[str, str, float]:
    """Stream a chat, close it after ``chunks`` content chunks; (text seen, dialogue id, closed at)."""
    seen = ""
    with httpx.stream("POST", f"{s.url}/api/chat", json={"model": MODEL, "messages": messages}, timeout=30) as r:
        dialogue = r.headers["x-tianma-dialogue-id"]
        got = 0
        for line in r.iter_lines():
            if line:
                seen += json.loads(line)["message"]["content"]
                got += 1
            if got >= chunks:
                break
    return seen, dialogue, time.monotonic()


def _wait(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_stop_stops_reading_the_model_and_records_what_the_user_saw(serve: ServeFactory) -> None:
    standin = OllamaStandin(reply=_long, piece_delay=0.02).start()  # ~1,000 pieces: ~20 s to the end
    s = serve(standin)
    try:
        seen, _dialogue, closed = _stop_after(s, 2, [{"role": "user", "content": "路由器怎么设置？"}])
        _wait(lambda: standin.cut_off == ["/api/chat"])
        assert time.monotonic() - closed < 5  # the model's answer was abandoned, not read to its end
        _wait(lambda: len(s.runtime.memories("me", "event")) == 1)
        (event,) = s.runtime.memories("me", "event")
        assert event.reply and seen and LONG.startswith(event.reply) and event.reply.startswith(seen)
        assert len(event.reply) < len(LONG) // 2
        _wait(lambda: bool(s.runtime.memories("me", "signal")))
        (signal,) = s.runtime.memories("me", "signal")
        assert (signal.data.get("type"), signal.data.get("target_event_id")) == ("impatience", event.id)
    finally:
        standin.close()


def test_the_next_message_after_a_stop_continues_the_dialogue(serve: ServeFactory) -> None:
    standin = OllamaStandin(reply=_long, piece_delay=0.02).start()
    s = serve(standin)
    try:
        first = [{"role": "user", "content": "路由器怎么设置？"}]
        seen, dialogue, _closed = _stop_after(s, 1, first)
        _wait(lambda: len(s.runtime.memories("me", "event")) == 1)
        time.sleep(0.5)  # the runner remembers the history just after the turn is recorded
        standin.reply = lambda _m: "好的。"
        nxt = [*first, {"role": "assistant", "content": seen}, {"role": "user", "content": "说简短一点"}]
        r = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "messages": nxt, "stream": False}, timeout=30)
        assert r.status_code == 200
        assert r.headers["x-tianma-dialogue-id"] == dialogue
    finally:
        standin.close()


def test_a_reply_read_to_its_end_is_not_an_interruption(serve: ServeFactory) -> None:
    s = serve()
    r = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "messages": [{"role": "user", "content": "你好"}]})
    assert r.status_code == 200
    assert s.runtime.memories("me", "signal") == []


def test_stop_while_the_model_is_still_reading_the_prompt_ends_the_turn_at_once(serve: ServeFactory) -> None:
    standin = OllamaStandin(reply=_long, delay=30).start()  # nothing comes for 30 s (a long prompt on a CPU)
    s = serve(standin)
    try:
        def ask() -> None:
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "messages": [{"role": "user", "content": "你好"}]},
                           timeout=1.5)  # fmt: skip

        asked = time.monotonic()
        ask()  # the client gives up after 1.5 s
        _wait(lambda: len(s.runtime.memories("me", "event")) == 1, timeout_s=8)
        assert time.monotonic() - asked < 8  # not when the model would have answered (30 s)
        (event,) = s.runtime.memories("me", "event")
        assert not event.reply
    finally:
        standin.close()


def test_a_stopping_server_ends_running_model_calls_and_keeps_what_was_read(serve: ServeFactory) -> None:
    standin = OllamaStandin(reply=_long, piece_delay=0.02).start()
    s = serve(standin)
    try:
        got: list[str] = []

        def ask() -> None:
            with httpx.stream("POST", f"{s.url}/api/chat", timeout=30,
                              json={"model": MODEL, "messages": [{"role": "user", "content": "路由器怎么设置？"}]}) as r:  # fmt: skip
                got.extend(json.loads(line)["message"]["content"] for line in r.iter_lines() if line)

        client = threading.Thread(target=ask)
        client.start()
        _wait(lambda: len(standin.requests_to("/api/chat")) == 1)
        time.sleep(0.5)
        begun = time.monotonic()
        s.app.state.tianma.turns.stopping()  # what `tianma serve` does on Ctrl-C / SIGTERM
        client.join(10)
        assert not client.is_alive() and time.monotonic() - begun < 5
        (event,) = s.runtime.memories("me", "event")
        assert event.reply and LONG.startswith(event.reply) and len(event.reply) < len(LONG) // 2
        assert "".join(got).startswith(event.reply)
        assert all(sig.data.get("type") != "impatience" for sig in s.runtime.memories("me", "signal"))
    finally:
        standin.close()


def test_a_server_shut_down_mid_turn_exits(make_runtime: Any) -> None:
    standin = OllamaStandin(reply=_long, delay=60).start()  # the model would answer in a minute
    rt = make_runtime(ollama={"base_url": standin.base_url})
    server = ServerThread(create_app(rt, scheduler=False))
    try:
        url = server.__enter__()
        def ask() -> None:
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{url}/api/chat", timeout=60,
                           json={"model": MODEL, "stream": False, "messages": [{"role": "user", "content": "你好"}]})  # fmt: skip

        threading.Thread(target=ask, daemon=True).start()
        _wait(lambda: len(standin.requests_to("/api/chat")) == 1)
        begun = time.monotonic()
        server.__exit__(None, None, None)  # uvicorn's graceful wait (10 s here), then the lifespan's close
        assert time.monotonic() - begun < 25 and not server._thread.is_alive()
    finally:
        standin.close()
