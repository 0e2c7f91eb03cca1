"""``serve.max_body_bytes``, ``serve.max_message_chars`` and ``serve.max_prompt_chars``."""

from __future__ import annotations

import json
import socket

import httpx

from tests.unit.serve.conftest import MODEL, ServeFactory

LIMITS = {"max_body_bytes": 2048, "max_message_chars": 10, "max_prompt_chars": 30}


def test_the_limits_are_settings_and_passed_through_calls_are_not_limited(serve: ServeFactory) -> None:
    s = serve(serve=LIMITS)
    padding = "x" * 3000
    big = {"model": MODEL, "stream": False, "messages": [{"role": "user", "content": "你好"}], "pad": padding}
    for path in ("/api/chat", "/v1/chat/completions", "/tianma/feedback", "/tianma/feedback/openwebui",
                 "/tianma/forget"):  # fmt: skip
        r = httpx.post(f"{s.url}{path}", json=big)
        assert r.status_code == 413 and "serve.max_body_bytes" in str(r.json()["error"]), path
    assert httpx.post(f"{s.url}/api/generate", json={"model": MODEL, "prompt": padding, "stream": False}).status_code == 200
    ten, eleven = "一二三四五六七八九十", "一二三四五六七八九十零"
    for path in ("/api/chat", "/v1/chat/completions"):
        ok = httpx.post(f"{s.url}{path}", json={"model": MODEL, "messages": [{"role": "user", "content": ten}]})
        assert ok.status_code == 200
        long = httpx.post(f"{s.url}{path}", json={"model": MODEL, "messages": [{"role": "user", "content": eleven}]})
        assert long.status_code == 400 and "serve.max_message_chars" in str(long.json()["error"])
        history = [{"role": "user", "content": ten}, {"role": "assistant", "content": ten * 2},
                   {"role": "user", "content": "好"}]  # fmt: skip
        too_much = httpx.post(f"{s.url}{path}", json={"model": MODEL, "messages": history})
        assert too_much.status_code == 400 and "serve.max_prompt_chars" in str(too_much.json()["error"])
    assert len(s.runtime.memories("me", "event")) == 2
    event_id = s.runtime.memories("me", "event")[0].id
    words = httpx.post(f"{s.url}/tianma/feedback", json={"event_id": event_id, "kind": "correction", "text": eleven})
    assert words.status_code == 400 and s.runtime.memories("me", "signal") == []


def test_a_body_announced_over_the_limit_is_refused_before_it_is_sent(serve: ServeFactory) -> None:
    """A client says 1 GB is coming and sends a few bytes: the 413 comes at once (waiting for the
    rest, or reading it, would hang here)."""
    s = serve()
    host, port = s.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1073741824\r\n\r\n{\"model\": ")  # fmt: skip
        answer = b""
        while b"}}" not in answer:  # the headers, then the JSON body (maybe in another packet)
            piece = conn.recv(65536)
            assert piece, answer
            answer += piece
    head, _, rest = answer.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 413 ")
    body = json.loads(rest)
    assert body["error"]["code"] == "request_too_large" and "1073741824 bytes" in body["error"]["message"]
