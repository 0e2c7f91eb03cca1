"""The Ollama boundary over real HTTP: ChatOllama, OllamaEmbedder, doctor and the ollama client.

The daemon is :class:`tianma.testing.ollama_standin.OllamaStandin`, which answers with Ollama's own
wire format and error bodies; storage is real SQLite and Qdrant local mode in ``tmp_path``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import numpy as np
import ollama
import pytest
from langchain_core.messages import HumanMessage

from tests.fakes import CharacterEmbedder
from tianma import Runtime, Settings
from tianma.cli.doctor import check_ollama
from tianma.errors import BackendUnavailableError, ChatModelUnavailableError
from tianma.guardrails.constitution import load_constitution
from tianma.llm.chat import call_chat
from tianma.llm.ollama import create_ollama_chat_model
from tianma.memory.embedders import OllamaEmbedder
from tianma.settings import OllamaSettings
from tianma.testing.ollama_standin import OllamaStandin, pieces

IDENTITY = load_constitution().identity

MODEL = "qwen2.5:7b"
USER = "li-ming"
RuntimeFactory = Callable[..., Runtime]


@pytest.fixture
def dead_url(no_proxy_for_loopback: None) -> str:
    """A loopback URL where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def silent_url(no_proxy_for_loopback: None) -> Iterator[str]:
    """A loopback URL whose listener never completes a handshake (a host that drops packets).

    The accept queue is filled and never drained, so the kernel drops further SYNs and
    the client sees a connect timeout, as with a powered-off or firewalled remote Ollama.
    """
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    address = listener.getsockname()
    queued: list[socket.socket] = []
    for _ in range(64):
        probe = socket.socket()
        probe.settimeout(0.2)
        try:
            probe.connect(address)
        except TimeoutError:
            probe.close()
            break
        queued.append(probe)
    else:
        for sock in [*queued, listener]:
            sock.close()
        pytest.skip("this kernel completes every handshake; no way to make a silent port")
    yield f"http://127.0.0.1:{address[1]}"
    for sock in [*queued, listener]:
        sock.close()


@pytest.fixture
def ollama_runtime(
    tmp_path: Path, ollama_standin: OllamaStandin, char_embedder: CharacterEmbedder
) -> Iterator[RuntimeFactory]:
    """Runtimes with the default ChatOllama, pointed at the stand-in unless told otherwise."""
    made: list[Runtime] = []

    def build(base_url: str | None = None, model: str = MODEL, timeout_s: float = 10.0) -> Runtime:
        ollama_settings = {
            "base_url": base_url or ollama_standin.base_url,
            "model": model,
            "timeout_s": timeout_s,
        }
        rt = Runtime(Settings(home=tmp_path / "home", ollama=ollama_settings), embedder=char_embedder)
        made.append(rt)
        return rt

    yield build
    for rt in made:
        rt.close()  # also closes the ChatOllama it built (else a ResourceWarning surfaces later)


def scripted(text: str) -> Callable[[list[dict[str, Any]]], str]:
    return lambda messages: text


def event_of(rt: Runtime, event_id: str | None) -> Any:
    """The recorded event with that id (fails the test when there is none)."""
    (event,) = [e for e in rt.memories(USER, kind="event") if e.id == event_id]
    return event


# -- (a) a turn through the default ChatOllama ----------------------------------------------


def test_turn_through_chat_ollama_returns_reply_and_sends_identity_then_memory(
    ollama_runtime: RuntimeFactory, ollama_standin: OllamaStandin
) -> None:
    rt = ollama_runtime()
    ollama_standin.reply = scripted("你好，李明！")

    first = rt.chat(USER, "你好，我叫李明，在杭州做软件工程师。", dialogue_id="d1")

    assert first.reply == "你好，李明！"
    (sent,) = [r.body for r in ollama_standin.requests_to("/api/chat")]
    assert sent is not None
    assert sent["model"] == MODEL
    assert sent["stream"] is True  # ChatOllama always streams, even from invoke()
    assert sent["options"]["temperature"] == 0.7
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert sent["messages"][0]["content"].startswith(IDENTITY)
    assert "【已知用户信息】" not in sent["messages"][0]["content"]
    assert sent["messages"][1]["content"] == "你好，我叫李明，在杭州做软件工程师。"
    assert event_of(rt, first.event_id).reply == "你好，李明！"

    ollama_standin.reply = scripted("你在杭州做软件工程师。")
    second = rt.chat(USER, "我在杭州做什么工作？", dialogue_id="d2")

    assert second.reply == "你在杭州做软件工程师。"
    assert [m.content for m in second.memories] == ["你好，我叫李明，在杭州做软件工程师。"]
    later = ollama_standin.requests_to("/api/chat")[-1].body
    assert later is not None
    system = later["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith(IDENTITY)
    block = system["content"].split("【已知用户信息】", 1)[1]
    assert "我叫李明，在杭州做软件工程师" in block
    assert later["messages"][1:] == [{"role": "user", "content": "我在杭州做什么工作？"}]


def test_turn_reports_token_usage_from_the_done_chunk(
    ollama_runtime: RuntimeFactory, ollama_standin: OllamaStandin, spans: Any
) -> None:
    rt = ollama_runtime()
    ollama_standin.reply = scripted("Hello there, friend.")

    rt.chat(USER, "hi", dialogue_id="d1")

    (chat_span,) = [s for s in spans.get_finished_spans() if s.name == f"chat {MODEL}"]
    attrs = dict(chat_span.attributes or {})
    assert attrs["gen_ai.usage.output_tokens"] == len(pieces("Hello there, friend.")) == 4
    assert attrs["gen_ai.usage.input_tokens"] > 0
    assert list(attrs["gen_ai.response.finish_reasons"]) == ["stop"]
    assert attrs["gen_ai.response.model"] == MODEL


# -- (b)(c)(d) failures are one clear line, the message is kept, the dialogue goes on ------------


@pytest.mark.parametrize("version", ["0.11.10", "0.12.0"])
def test_missing_model_says_ollama_pull_and_keeps_the_message(
    ollama_runtime: RuntimeFactory, ollama_standin: OllamaStandin, version: str
) -> None:
    ollama_standin.version = version  # chat's 404 body changed in 0.12.0; both must map
    ollama_standin.models = ["llama3.2:latest"]
    rt = ollama_runtime()

    with pytest.raises(ChatModelUnavailableError) as caught:
        rt.chat(USER, "帮我记一下明天买牛奶", dialogue_id="d1")

    message = str(caught.value)
    assert f"ollama pull {MODEL}" in message
    assert "TIANMA_OLLAMA__MODEL" in message
    assert "\n" not in message
    assert event_of(rt, caught.value.event_id).content == "帮我记一下明天买牛奶"

    ollama_standin.models.append(MODEL)
    ollama_standin.reply = scripted("记下了。")
    assert rt.chat(USER, "再说一次：明天买牛奶", dialogue_id="d1").reply == "记下了。"


def test_unreachable_ollama_names_the_url_and_ollama_serve(
    ollama_runtime: RuntimeFactory, ollama_standin: OllamaStandin, dead_url: str
) -> None:
    rt = ollama_runtime(base_url=dead_url)

    with pytest.raises(ChatModelUnavailableError) as caught:
        rt.chat(USER, "今天天气怎么样？", dialogue_id="d1")

    message = str(caught.value)
    assert dead_url in message
    assert "`ollama serve`" in message
    assert event_of(rt, caught.value.event_id).content == "今天天气怎么样？"
    assert ollama_standin.requests == []


def test_timeout_names_the_limit_and_the_next_turn_works(
    ollama_runtime: RuntimeFactory, ollama_standin: OllamaStandin
) -> None:
    rt = ollama_runtime(timeout_s=0.3)
    ollama_standin.delay = 5.0

    with pytest.raises(ChatModelUnavailableError) as caught:
        rt.chat(USER, "写一首很长的诗", dialogue_id="d1")

    message = str(caught.value)
    assert "did not answer within 0.3 s" in message
    assert "TIANMA_OLLAMA__TIMEOUT_S" in message
    failed = event_of(rt, caught.value.event_id)
    assert (failed.content, failed.reply) == ("写一首很长的诗", None)

    ollama_standin.delay = 0.0
    ollama_standin.reply = scripted("好的，一首短诗。")
    turn = rt.chat(USER, "那就写一首短的", dialogue_id="d1")

    assert turn.reply == "好的，一首短诗。"
    assert event_of(rt, turn.event_id).reply == "好的，一首短诗。"
    retry = ollama_standin.requests_to("/api/chat")[-1].body
    assert retry is not None
    roles = [m["role"] for m in retry["messages"]]
    assert roles == ["system", "user", "user"]  # the failed turn stays, with no empty reply
    assert [m["content"] for m in retry["messages"][1:]] == ["写一首很长的诗", "那就写一首短的"]


@pytest.mark.parametrize(
    ("failure", "raised", "says"),
    [
        ("missing", ollama.ResponseError, f"run `ollama pull {MODEL}`"),
        ("unreachable", httpx.ConnectError, "start it (`ollama serve`)"),
        ("slow", httpx.ReadTimeout, "did not answer within 0.3 s"),
        ("silent", httpx.ConnectTimeout, "start it (`ollama serve`)"),
    ],
)
def test_call_chat_maps_what_chat_ollama_raises(
    request: pytest.FixtureRequest,
    ollama_standin: OllamaStandin,
    failure: str,
    raised: type[Exception],
    says: str,
) -> None:
    """The exceptions ChatOllama really raises (it streams, so httpx errors arrive unwrapped)."""
    elsewhere = {"unreachable": "dead_url", "silent": "silent_url"}
    base_url = (
        request.getfixturevalue(elsewhere[failure]) if failure in elsewhere else ollama_standin.base_url
    )
    if failure == "missing":
        ollama_standin.models = []
    ollama_standin.delay = 5.0 if failure == "slow" else 0.0
    settings = OllamaSettings(base_url=base_url, model=MODEL, timeout_s=0.3)
    model = create_ollama_chat_model(settings)
    try:
        with pytest.raises(ChatModelUnavailableError) as caught:
            call_chat(model, [HumanMessage("hi")], base_url=base_url, timeout_s=0.3)
    finally:
        cast(Any, model)._client.close()

    assert type(caught.value.__cause__) is raised
    assert says in str(caught.value)
    if failure != "slow":
        assert base_url in str(caught.value)


# -- (e) embeddings ---------------------------------------------------------------------------


def test_ollama_embedder_returns_normalised_rows(ollama_standin: OllamaStandin) -> None:
    embedder = OllamaEmbedder(ollama_standin.base_url, "bge-m3", timeout_s=5.0)
    try:
        matrix = embedder.embed_passages(["我叫李明", "I live in Hangzhou", "我叫李明"])
        query = embedder.embed_query("杭州")
        dim = embedder.dim
    finally:
        embedder.close()

    assert matrix.shape == (3, 64) and matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(matrix[0], matrix[2])
    assert query.shape == (64,) and dim == 64
    sent = ollama_standin.requests_to("/api/embed")[0].body
    assert sent == {"model": "bge-m3", "input": ["我叫李明", "I live in Hangzhou", "我叫李明"]}


def test_ollama_embedder_missing_model_says_ollama_pull(ollama_standin: OllamaStandin) -> None:
    embedder = OllamaEmbedder(ollama_standin.base_url, "nomic-embed-text", timeout_s=5.0)
    try:
        with pytest.raises(BackendUnavailableError) as caught:
            embedder.embed_query("hello")
    finally:
        embedder.close()

    message = str(caught.value)
    assert "(404)" in message
    assert 'model "nomic-embed-text" not found, try pulling it first' in message
    assert "`ollama pull nomic-embed-text`" in message


def test_ollama_embedder_unreachable_names_the_url(dead_url: str) -> None:
    embedder = OllamaEmbedder(dead_url, "bge-m3", timeout_s=5.0)
    try:
        with pytest.raises(BackendUnavailableError, match="unreachable") as caught:
            embedder.embed_query("hello")
    finally:
        embedder.close()

    assert dead_url in str(caught.value)


# -- (f) doctor -------------------------------------------------------------------------------


def doctor_settings(tmp_path: Path, base_url: str, model: str) -> Settings:
    return Settings(home=tmp_path / "home", ollama={"base_url": base_url, "model": model})


@pytest.mark.parametrize("model", [MODEL, "bge-m3"])  # "bge-m3" is listed as "bge-m3:latest"
def test_doctor_sees_ollama_and_the_model(tmp_path: Path, ollama_standin: OllamaStandin, model: str) -> None:
    found, chat_model = check_ollama(doctor_settings(tmp_path, ollama_standin.base_url, model))

    assert (found.ok, found.fatal) == (True, False)
    assert found.detail == f"{ollama_standin.base_url}, version 0.12.0"
    assert (chat_model.ok, chat_model.detail) == (True, f"{model} is installed")
    assert [r.path for r in ollama_standin.requests] == ["/api/version", "/api/tags"]


def test_doctor_reports_a_missing_model_with_the_pull_hint(
    tmp_path: Path, ollama_standin: OllamaStandin
) -> None:
    found, chat_model = check_ollama(doctor_settings(tmp_path, ollama_standin.base_url, "llama3.2"))

    assert found.ok
    assert (chat_model.ok, chat_model.fatal) == (False, False)
    assert "run `ollama pull llama3.2`" in chat_model.detail


def test_doctor_reports_unreachable_ollama_as_a_warning(tmp_path: Path, dead_url: str) -> None:
    (check,) = check_ollama(doctor_settings(tmp_path, dead_url, MODEL))

    assert (check.ok, check.fatal) == (False, False)
    assert dead_url in check.detail
    assert "`ollama serve`" in check.detail


# -- (g) the official client speaks to the stand-in ----------------------------------------------


@pytest.fixture
def client(ollama_standin: OllamaStandin) -> Iterator[ollama.Client]:
    with ollama.Client(host=ollama_standin.base_url, timeout=5.0) as c:
        yield c


def test_official_client_chat_without_streaming(client: ollama.Client, ollama_standin: OllamaStandin) -> None:
    ollama_standin.reply = lambda messages: f"{len(messages)} messages, last: {messages[-1]['content']}"

    answer = client.chat(
        model=MODEL,
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        stream=False,
    )

    assert answer.message.role == "assistant"
    assert answer.message.content == "2 messages, last: hi"
    assert (answer.done, answer.done_reason, answer.model) == (True, "stop", MODEL)
    assert answer.eval_count == len(pieces("2 messages, last: hi"))
    assert answer.prompt_eval_count and answer.total_duration and answer.eval_duration
    assert ollama_standin.requests_to("/api/chat")[0].body == {
        "model": MODEL,
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "tools": [],
        "stream": False,
    }


def test_official_client_chat_streaming(client: ollama.Client, ollama_standin: OllamaStandin) -> None:
    ollama_standin.reply = scripted("你好，world & <everyone>!")

    chunks = list(client.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True))

    assert len(chunks) > 2
    assert "".join(c.message.content or "" for c in chunks) == "你好，world & <everyone>!"
    *body, last = chunks
    assert all(not c.done and c.done_reason is None and c.eval_count is None for c in body)
    assert (last.done, last.done_reason, last.message.content) == (True, "stop", "")
    assert last.eval_count == len(body) and last.prompt_eval_count == 1


def test_official_client_lists_shows_generates_and_embeds(client: ollama.Client) -> None:
    listed = client.list()
    shown = client.show(MODEL)
    generated = client.generate(model=MODEL, prompt="hello", system="be brief")
    streamed = "".join(p.response or "" for p in client.generate(model=MODEL, prompt="hello", stream=True))
    embedded = client.embed(model="bge-m3", input="hello", dimensions=16)

    assert [m.model for m in listed.models] == [MODEL, "bge-m3:latest"]
    first = listed.models[0]
    assert first.details is not None and first.details.family == "qwen2"
    assert first.modified_at is not None and first.modified_at.utcoffset() is not None
    assert first.digest is not None and len(first.digest) == 64
    assert shown.capabilities == ["completion"] and shown.modelinfo
    assert generated.response == streamed == "你说：hello"
    assert generated.done_reason == "stop" and generated.context
    assert len(embedded.embeddings) == 1 and len(embedded.embeddings[0]) == 16
    assert abs(float(np.linalg.norm(embedded.embeddings[0])) - 1.0) < 1e-5


@pytest.mark.parametrize(
    ("version", "error"),
    [("0.12.0", "model 'nope' not found"), ("0.11.10", 'model "nope" not found, try pulling it first')],
)
@pytest.mark.parametrize("stream", [False, True])
def test_official_client_raises_response_error_for_a_missing_model(
    client: ollama.Client, ollama_standin: OllamaStandin, version: str, error: str, stream: bool
) -> None:
    ollama_standin.version = version

    messages = [{"role": "user", "content": "x"}]
    with pytest.raises(ollama.ResponseError) as caught:
        if stream:
            list(client.chat(model="nope", messages=messages, stream=True))
        else:
            client.chat(model="nope", messages=messages, stream=False)

    assert (caught.value.status_code, caught.value.error) == (404, error)


def test_wire_format_matches_ollama(ollama_standin: OllamaStandin) -> None:
    """NDJSON in chunked HTTP/1.1, JSON errors, compact Go-style encoding."""
    ollama_standin.reply = scripted("a <b>")
    request = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}  # no "stream": streams
    with httpx.Client(base_url=ollama_standin.base_url, timeout=5.0) as http:
        with http.stream("POST", "/api/chat", json=request) as streamed:
            lines = [json.loads(line) for line in streamed.iter_lines() if line]
            headers = streamed.headers
        missing = http.post("/api/chat", json={**request, "model": "nope"})
        unknown = http.get("/api/nothing")

    assert headers["content-type"] == "application/x-ndjson"
    assert headers["transfer-encoding"] == "chunked"
    assert [line["message"]["content"] for line in lines] == ["a", " <", "b", ">", ""]
    assert set(lines[0]) == {"model", "created_at", "message", "done"}
    assert lines[0]["created_at"].endswith("Z")
    assert {"done_reason", "total_duration", "load_duration", "prompt_eval_count", "eval_count"} <= set(
        lines[-1]
    )
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/json; charset=utf-8"
    assert missing.content == b'{"error":"model \'nope\' not found"}'
    assert (unknown.status_code, unknown.text) == (404, "404 page not found")
