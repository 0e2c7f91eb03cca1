"""The official ``openai`` client against ``tianma serve``'s OpenAI-compatible chat API."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.unit.serve.conftest import MODEL, Served, ServeFactory
from tianma.memory.subject_vectors import decoded


def _client(s: Served, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{s.url}/v1", api_key=key, max_retries=0)


def test_non_streaming_completion(serve: ServeFactory) -> None:
    s = serve()
    with _client(s) as client:
        raw = client.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": "你好，我在杭州"}]
        )
    done = raw.parse()
    assert done.object == "chat.completion"
    assert done.choices[0].message.content == "你说：你好，我在杭州"
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None and done.usage.completion_tokens > 0
    event_id = raw.headers["x-tianma-event-id"]
    assert (done.model_extra or {})["tianma"]["event_id"] == event_id
    assert s.runtime.memory.store.get(event_id).content == "你好，我在杭州"


def test_streaming_completion_is_sse_and_ends_with_the_event_id(serve: ServeFactory) -> None:
    s = serve()
    with _client(s) as client:
        chunks = list(client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "先说结论。再说原因！"}], stream=True,
            stream_options={"include_usage": True},
        ))  # fmt: skip
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert pieces == ["你说：先说结论。", "再说原因！"]
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finals] == ["stop"]
    event_id = (finals[0].model_extra or {})["tianma"]["event_id"]
    assert s.runtime.memory.store.get(event_id).content == "先说结论。再说原因！"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_memory_crosses_conversations_and_options_are_translated(serve: ServeFactory) -> None:
    s = serve()
    with _client(s) as client:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "我的猫叫年糕"}])
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": [{"type": "text", "text": "我的猫叫什么名字？"}]}],
            temperature=0.2, max_tokens=64, stop="END", response_format={"type": "json_object"},
        )  # fmt: skip
    body = s.chat_bodies()[-1]
    system = body["messages"][0]["content"]
    assert "年糕" in system and "Be brief." in system
    assert body["messages"][1] == {"role": "user", "content": "我的猫叫什么名字？"}
    assert body["options"] == {"temperature": 0.2, "num_predict": 64, "stop": ["END"]}
    assert body["format"] == "json"


def test_models_lists_ollamas(serve: ServeFactory) -> None:
    s = serve()
    with _client(s) as client:
        assert [m.id for m in client.models.list()] == ["qwen2.5:7b", "bge-m3:latest"]


def test_errors_are_openai_errors(serve: ServeFactory) -> None:
    s = serve()
    with _client(s) as client, pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="nope:1b", messages=[{"role": "user", "content": "hi"}])
    assert "model 'nope:1b' not found" in str(err.value)
    r = httpx.post(f"{s.url}/v1/chat/completions", json={"model": MODEL, "messages": []})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"


def test_a_statement_through_the_proxy_keeps_its_subject_vector_and_closes_what_it_revises(serve: ServeFactory) -> None:
    s = serve()
    with _client(s) as client:
        for text in ("以后回答我的问题请先给结论，再讲细节。", "不对，以后不用先给结论了，直接按步骤讲就行。"):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}])
    store, embedder = s.runtime.memory.store, s.runtime.memory.embedder
    (user,) = store.users()
    first, second = sorted(s.runtime.memories(user, kind="event"), key=lambda r: r.at or r.created_at)
    assert decoded(embedder, first) is not None and decoded(embedder, second) is not None
    assert store.get(first.id).data["closed_by"] == second.id
