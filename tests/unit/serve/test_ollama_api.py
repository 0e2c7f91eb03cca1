"""The official ``ollama`` client against ``tianma serve`` with a stand-in Ollama behind it."""

from __future__ import annotations

import json

import httpx
import ollama
import pytest

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma.testing.ollama_standin import OllamaStandin


def test_non_streaming_chat_records_a_turn_and_says_its_event_id(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    answer = client.chat(model=MODEL, messages=[{"role": "user", "content": "你好，我叫小林"}], stream=False)
    assert answer.message.content == "你说：你好，我叫小林"
    assert answer.done and answer.done_reason == "stop"
    assert answer.eval_count and answer.eval_count > 0  # Ollama's metrics come through
    (event,) = s.runtime.memories("me", "event")
    assert (event.content, event.reply) == ("你好，我叫小林", answer.message.content)


def test_streaming_chat_streams_the_reply_sentence_by_sentence(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    chunks = list(client.chat(model=MODEL, messages=[{"role": "user", "content": "今天天气很好。我们去公园吧！"}],
                              stream=True))  # fmt: skip
    text = "".join(c.message.content or "" for c in chunks)
    assert text == "你说：今天天气很好。我们去公园吧！"
    assert [c.message.content for c in chunks if c.message.content] == ["你说：今天天气很好。", "我们去公园吧！"]
    assert chunks[-1].done and not any(c.done for c in chunks[:-1])


def test_the_final_chunk_names_the_event_and_the_dialogue(serve: ServeFactory) -> None:
    s = serve()
    with httpx.stream("POST", f"{s.url}/api/chat", json={"model": MODEL, "messages": [
            {"role": "user", "content": "你好"}]}) as r:  # fmt: skip
        lines = [json.loads(line) for line in r.iter_lines() if line]
    final = lines[-1]["tianma"]
    assert s.runtime.memory.store.get(final["event_id"]).dialogue_id == final["dialogue_id"]


def test_the_event_id_is_in_the_response_headers(serve: ServeFactory) -> None:
    s = serve()
    for stream in (True, False):
        r = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "stream": stream,
                       "messages": [{"role": "user", "content": "记一下"}]})  # fmt: skip
        assert r.status_code == 200
        last = json.loads(r.text.strip().splitlines()[-1])
        assert r.headers["x-tianma-event-id"] == last["tianma"]["event_id"]
        assert r.headers["content-type"].startswith("application/x-ndjson" if stream else "application/json")


def test_memory_from_one_conversation_reaches_the_next(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    client.chat(model=MODEL, messages=[{"role": "user", "content": "我对花生过敏，做菜千万不要放花生"}], stream=False)
    client.chat(model=MODEL, messages=[{"role": "user", "content": "我对什么食物过敏？"}], stream=False)
    second = s.chat_bodies()[-1]["messages"]
    assert second[0]["role"] == "system"
    assert "花生" in second[0]["content"]  # the first conversation, as memory
    assert [m["role"] for m in second] == ["system", "user"]  # nothing replaced or added to the history
    events = s.runtime.memories("me", "event")
    assert len({e.dialogue_id for e in events}) == 2


def test_a_change_the_rules_do_not_read_is_shown_after_the_wish_it_changes(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    for said in ("以后给我推荐电影就推恐怖片，越吓人越好", "恐怖片看多了晚上老睡不着，最近就想看点轻松的"):
        client.chat(model=MODEL, messages=[{"role": "user", "content": said}], stream=False)
    client.chat(model=MODEL, messages=[{"role": "user", "content": "周末想看部电影，有什么推荐？"}], stream=False)
    system = s.chat_bodies()[-1]["messages"][0]["content"]
    wish, later = system.index("越吓人越好」"), system.index("用户后来说 / the user later said")
    assert wish < later and "最近就想看点轻松的」" in system[later:]


def test_the_clients_history_and_system_prompt_are_kept(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    history = [
        {"role": "system", "content": "Answer like a pirate."},
        {"role": "user", "content": "第一句"},
        {"role": "assistant", "content": "Arr, 第一句"},
        {"role": "user", "content": "第二句"},
    ]
    client.chat(model=MODEL, messages=history, stream=False, options={"temperature": 0.1}, keep_alive="1m")
    sent = s.chat_bodies()[-1]
    assert sent["messages"][1:] == history[1:]
    system = sent["messages"][0]["content"]
    assert system.index(s.runtime.constitution.identity[:10]) < system.index("Answer like a pirate.")
    assert sent["options"] == {"temperature": 0.1} and sent["keep_alive"] == "1m"


def test_turns_of_one_conversation_share_a_dialogue(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    messages = [{"role": "user", "content": "帮我规划周末"}]
    first = client.chat(model=MODEL, messages=messages, stream=False)
    messages += [{"role": "assistant", "content": first.message.content}, {"role": "user", "content": "那周日呢？"}]
    list(client.chat(model=MODEL, messages=messages, stream=True))
    client.chat(model=MODEL, messages=[{"role": "user", "content": "帮我规划周末"}], stream=False)
    events = sorted(s.runtime.memories("me", "event"), key=lambda e: e.created_at)
    assert [e.content for e in events] == ["帮我规划周末", "那周日呢？", "帮我规划周末"]
    assert events[0].dialogue_id == events[1].dialogue_id != events[2].dialogue_id


def test_a_client_conversation_id_names_the_dialogue(serve: ServeFactory) -> None:
    s = serve()
    ids = set()
    for text in ("一", "二"):
        r = httpx.post(f"{s.url}/api/chat", headers={"X-Conversation-Id": "chat-42"},
                       json={"model": MODEL, "stream": False, "messages": [{"role": "user", "content": text}]})
        ids.add(r.json()["tianma"]["dialogue_id"])
    assert len(ids) == 1


def test_a_missing_model_is_the_same_404_as_ollamas(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    with pytest.raises(ollama.ResponseError) as err:
        client.chat(model="llama9:70b", messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 404
    assert err.value.error == "model 'llama9:70b' not found"
    r = httpx.post(f"{s.url}/api/chat", json={"model": "llama9:70b", "messages": [{"role": "user", "content": "hi"}]})
    assert "ollama pull llama9:70b" in r.json()["hint"]
    assert s.runtime.memories("me", "event") == []  # refused before the turn: nothing recorded
    assert s.chat_bodies() == []


def test_ollama_down_is_a_clear_502(serve: ServeFactory) -> None:
    standin = OllamaStandin().start()
    s = serve(standin)
    standin.close()
    r = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "messages": [{"role": "user", "content": "在吗"}]})
    assert r.status_code == 502
    assert "ollama serve" in r.json()["hint"]
    with pytest.raises(ollama.ResponseError) as err:
        s.ollama().list()
    assert err.value.status_code == 502


def test_other_endpoints_pass_through(serve: ServeFactory) -> None:
    s = serve()
    client = s.ollama()
    assert [m.model for m in client.list().models] == ["qwen2.5:7b", "bge-m3:latest"]
    assert client.show(MODEL).capabilities == ["completion"]
    assert len(client.embed(model="bge-m3", input=["一", "二"]).embeddings) == 2
    assert httpx.get(f"{s.url}/api/version").json() == {"version": "0.12.0"}
    assert httpx.get(s.url).text == "Ollama is running"
    generated = "".join(c.response for c in client.generate(model=MODEL, prompt="写一句诗", stream=True))
    assert generated == "你说：写一句诗"
    with pytest.raises(ollama.ResponseError) as err:
        client.show("nope")
    assert (err.value.status_code, err.value.error) == (404, "model 'nope' not found")
    assert s.runtime.memories("me", "event") == []  # none of these is a turn


def test_bad_requests_get_ollamas_400(serve: ServeFactory) -> None:
    s = serve()
    assert httpx.post(f"{s.url}/api/chat", content=b"{not json").status_code == 400
    r = httpx.post(f"{s.url}/api/chat", json={"messages": [{"role": "user", "content": "hi"}]})
    assert (r.status_code, r.json()) == (400, {"error": "model is required"})


def test_feedback_by_event_id(serve: ServeFactory) -> None:
    s = serve()
    answer = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "stream": False,
                        "messages": [{"role": "user", "content": "讲个笑话"}]})  # fmt: skip
    event_id = answer.headers["x-tianma-event-id"]
    r = httpx.post(f"{s.url}/tianma/feedback", json={"event_id": event_id, "kind": "dislike", "text": "不好笑"})
    assert r.status_code == 200
    signals = s.runtime.memories("me", "signal")
    assert [sig.id for sig in signals] == [r.json()["signal_id"]]
    bad = httpx.post(f"{s.url}/tianma/feedback", json={"event_id": event_id, "kind": "meh"})
    assert bad.status_code == 400
    missing = httpx.post(f"{s.url}/tianma/feedback", json={"event_id": "nope", "kind": "like"})
    assert missing.status_code == 404


def test_a_clients_background_task_is_passed_through_without_memory(serve: ServeFactory) -> None:
    s = serve()
    task = "### Task:\nGenerate a concise, 3-5 word title summarizing the chat history.\n<chat_history>USER: 我家猫叫年糕"
    answer = s.ollama().chat(model=MODEL, messages=[{"role": "user", "content": task}], stream=False)
    assert answer.message.content == f"你说：{task}"
    assert s.runtime.memories("me", "event") == []  # not a turn: nothing recorded
    assert s.chat_bodies()[-1]["messages"] == [{"role": "user", "content": task}]  # no memory block added


def test_passed_through_answers_carry_one_date_one_server_and_a_decoded_body(serve: ServeFactory) -> None:
    s = serve()
    r = httpx.get(f"{s.url}/api/tags", headers={"Accept-Encoding": "br, gzip"})
    assert r.status_code == 200 and r.json()["models"]
    assert len(r.headers.get_list("date")) == 1 and len(r.headers.get_list("server")) <= 1
    assert "content-encoding" not in r.headers  # decoded here, so no client ever gets a body it cannot read
