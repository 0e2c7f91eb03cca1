"""API keys: who is served as whom, and one user's memory never reaching another."""

from __future__ import annotations

import httpx
import ollama
import pytest

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma.errors import ConfigError
from tianma.serve import create_app
from tianma.serve.auth import is_loopback

KEYS = {"api_keys": {"key-alice": "alice", "key-bob": "bob"}, "admin_keys": ["key-admin"]}


def _chat(url: str, key: str | None, text: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{url}/api/chat", headers=headers,
                      json={"model": MODEL, "stream": False, "messages": [{"role": "user", "content": text}]})  # fmt: skip


def test_no_key_or_a_wrong_key_is_401_everywhere(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    assert _chat(s.url, None, "hi").status_code == 401
    assert _chat(s.url, "key-mallory", "hi").json() == {"error": "unauthorized: unknown API key"}
    assert httpx.get(f"{s.url}/api/tags").status_code == 401
    assert httpx.get(f"{s.url}/v1/models", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.post(f"{s.url}/tianma/feedback", json={"event_id": "x", "kind": "like"}).status_code == 401
    with pytest.raises(ollama.ResponseError) as err:
        s.ollama().chat(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 401
    assert s.runtime.memories("alice") == [] and s.standin.requests_to("/api/chat") == []


def test_each_key_is_its_user_and_memory_stays_with_it(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    client = ollama.Client(host=s.url, headers={"Authorization": "Bearer key-alice"})
    try:
        client.chat(model=MODEL, messages=[{"role": "user", "content": "我的银行卡密码提示是紫色大象"}])
    finally:
        client.close()
    assert [e.content for e in s.runtime.memories("alice", "event")] == ["我的银行卡密码提示是紫色大象"]
    _chat(s.url, "key-bob", "我的银行卡密码提示是什么？")
    bob_prompt = s.chat_bodies()[-1]["messages"][0]["content"]
    assert "紫色大象" not in bob_prompt
    _chat(s.url, "key-alice", "我的银行卡密码提示是什么？")
    assert "紫色大象" in s.chat_bodies()[-1]["messages"][0]["content"]
    assert len(s.runtime.memories("bob", "event")) == 1


def test_feedback_only_on_your_own_turns(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    event_id = _chat(s.url, "key-alice", "你好").headers["x-tianma-event-id"]
    as_bob = httpx.post(f"{s.url}/tianma/feedback", headers={"X-API-Key": "key-bob"},
                        json={"event_id": event_id, "kind": "dislike"})  # fmt: skip
    assert as_bob.status_code == 404
    assert s.runtime.memories("alice", "signal") == []
    as_admin = httpx.post(f"{s.url}/tianma/feedback", headers={"X-API-Key": "key-admin"},
                          json={"event_id": event_id, "kind": "like"})  # fmt: skip
    assert as_admin.status_code == 200
    assert len(s.runtime.memories("alice", "signal")) == 1


def test_keyless_is_the_default_user_on_loopback_only(make_runtime) -> None:  # type: ignore[no-untyped-def]
    rt = make_runtime(user="nas-owner")
    create_app(rt, host="127.0.0.1", scheduler=False)
    with pytest.raises(ConfigError, match="API keys"):
        create_app(rt, host="0.0.0.0", scheduler=False)
    keyed = make_runtime(name="keyed", serve=KEYS)
    create_app(keyed, host="0.0.0.0", scheduler=False)  # keys set: any address is fine


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.10", "nas.local", "::"))
