"""Malformed requests, generated, against both chat APIs of one running server.

Every case must get a clear answer: never a 500, always JSON in its API's error shape, naming the
field where there is one, with nothing recorded and nothing asked of Ollama — and the server
answers a valid request afterwards. Categories: wrong types for every field, missing required
fields, huge bodies and messages, deep nesting, invalid UTF-8, lone surrogates, bad model names,
content types, non-object and invalid JSON. Extra fields are the other side: accepted.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.fakes import ScriptedChatModel
from tests.unit.serve.conftest import MODEL
from tianma import Runtime, Settings
from tianma.serve import create_app
from tianma.serve.bodies import MAX_DEPTH, param
from tianma.settings import ServeSettings
from tianma.storage.protocols import Embedder
from tianma.testing.ollama_standin import OllamaStandin
from tianma.testing.server import ServerThread

PATHS = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}
LIMITS = ServeSettings()
IMAGE = "iVBORw0KGgo="
OLLAMA = {
    "model": MODEL, "stream": False, "options": {"temperature": 0.1}, "keep_alive": "1m", "think": False, "format": "",
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
    "messages": [
        {"role": "user", "content": "杭州天气怎么样？"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "杭州"}}}]},
        {"role": "tool", "content": "晴，25 度", "tool_name": "weather"},
        {"role": "user", "content": "这张图里是哪里？", "images": [IMAGE]},
    ],
}  # fmt: skip
OPENAI = {
    "model": MODEL, "stream": False, "stream_options": {"include_usage": True}, "temperature": 0.2, "top_p": 0.9,
    "frequency_penalty": 0, "presence_penalty": 0, "seed": 7, "max_tokens": 64, "max_completion_tokens": 64,
    "stop": ["END"], "tool_choice": "auto",
    "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}},
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "杭州天气怎么样？"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{IMAGE}"}}]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "晴，25 度"},
        {"role": "user", "content": "这张图里是哪里？"},
    ],
}  # fmt: skip
BASES = {"ollama": OLLAMA, "openai": OPENAI}
Path = tuple[str | int, ...]
_N, _B, _I, _F, _S, _L, _D = "null", "bool", "int", "float", "str", "list", "dict"
SAMPLES: dict[str, Any] = {_N: None, _B: True, _I: 7, _F: 1.5, _S: "x", _L: [1], _D: {"k": 1}}
FIELDS: dict[str, list[tuple[Path, set[str]]]] = {
    "ollama": [
        (("model",), {_S}), (("messages",), {_N, _L}), (("messages", 0), {_D}), (("messages", 0, "role"), {_S}),
        (("messages", 0, "content"), {_N, _S}), (("messages", 3, "images"), {_N, _L}),
        (("messages", 3, "images", 0), {_S}), (("messages", 1, "tool_calls"), {_N, _L}),
        (("messages", 1, "tool_calls", 0), {_D}), (("messages", 1, "tool_calls", 0, "function"), {_D}),
        (("messages", 1, "tool_calls", 0, "function", "name"), {_S}),
        (("messages", 1, "tool_calls", 0, "function", "arguments"), {_N, _D}), (("messages", 2, "tool_name"), {_N, _S}),
        (("stream",), {_N, _B}), (("format",), {_N, _S, _D}), (("options",), {_N, _D}), (("tools",), {_N, _L}),
        (("tools", 0), {_D}), (("tools", 0, "type"), {_S}), (("tools", 0, "function"), {_D}),
        (("tools", 0, "function", "name"), {_S}), (("tools", 0, "function", "parameters"), {_N, _D}),
        (("keep_alive",), {_N, _S, _I, _F}), (("think",), {_N, _B, _S}),
    ],
    "openai": [
        (("model",), {_S}), (("messages",), {_L}), (("messages", 1), {_D}), (("messages", 1, "role"), {_S}),
        (("messages", 1, "content"), {_N, _S, _L}), (("messages", 1, "content", 0), {_D}),
        (("messages", 1, "content", 0, "type"), {_S}), (("messages", 1, "content", 0, "text"), {_N, _S}),
        (("messages", 1, "content", 1, "image_url"), {_N, _S, _D}), (("messages", 1, "content", 1, "image_url", "url"), {_S}),
        (("messages", 2, "tool_calls"), {_N, _L}), (("messages", 2, "tool_calls", 0), {_D}),
        (("messages", 2, "tool_calls", 0, "id"), {_N, _S}), (("messages", 2, "tool_calls", 0, "function"), {_D}),
        (("messages", 2, "tool_calls", 0, "function", "name"), {_S}),
        (("messages", 2, "tool_calls", 0, "function", "arguments"), {_N, _S, _D}),
        (("messages", 3, "tool_call_id"), {_N, _S}), (("stream",), {_N, _B}), (("stream_options",), {_N, _D}),
        (("stream_options", "include_usage"), {_N, _B}), (("temperature",), {_N, _I, _F}), (("top_p",), {_N, _I, _F}),
        (("frequency_penalty",), {_N, _I, _F}), (("presence_penalty",), {_N, _I, _F}), (("seed",), {_N, _I}),
        (("max_tokens",), {_N, _I}), (("max_completion_tokens",), {_N, _I}), (("stop",), {_N, _S, _L}),
        (("stop", 0), {_S}), (("response_format",), {_N, _D}), (("response_format", "type"), {_S}),
        (("response_format", "json_schema"), {_N, _D}), (("response_format", "json_schema", "schema"), {_N, _D}),
        (("tools",), {_N, _L}), (("tools", 0, "function"), {_D}), (("tools", 0, "function", "name"), {_S}),
        (("tool_choice",), {_N, _S, _D}),
    ],
}  # fmt: skip
REQUIRED: dict[str, list[Path]] = {
    "ollama": [("model",), ("messages", 0, "role"), ("messages", 1, "tool_calls", 0, "function"),
               ("messages", 1, "tool_calls", 0, "function", "name"), ("tools", 0, "function"), ("tools", 0, "function", "name")],
    "openai": [("model",), ("messages",), ("messages", 1, "role"), ("messages", 1, "content", 0, "type"),
               ("messages", 1, "content", 1, "image_url", "url"), ("messages", 2, "tool_calls", 0, "function"),
               ("messages", 2, "tool_calls", 0, "function", "name"), ("response_format", "type"), ("tools", 0, "function"),
               ("tools", 0, "function", "name")],
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    name: str
    api: str
    content: bytes | Callable[[], Iterator[bytes]]
    status: int = 400
    param: str | None = None
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


def _changed(body: dict[str, Any], path: Path, value: Any = ..., drop: bool = False) -> dict[str, Any]:
    out = copy.deepcopy(body)
    here: Any = out
    for part in path[:-1]:
        here = here[part]
    if drop:
        del here[path[-1]]
    else:
        here[path[-1]] = value
    return out


def _dump(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


def _last_text(api: str, text: str) -> dict[str, Any]:
    return _changed(BASES[api], ("messages", len(BASES[api]["messages"]) - 1, "content"), text)


def _wrong_types(api: str, base: dict[str, Any]) -> Iterator[Case]:
    for path, allowed in FIELDS[api]:
        for kind in sorted(set(SAMPLES) - allowed):
            body = _changed(base, path, SAMPLES[kind])
            yield Case(f"{api} {param(path)}={kind}", api, _dump(body), param=param(path))


def _missing(api: str, base: dict[str, Any]) -> Iterator[Case]:
    for path in REQUIRED[api]:
        yield Case(f"{api} no {param(path)}", api, _dump(_changed(base, path, drop=True)), param=param(path))


def _models(api: str, base: dict[str, Any]) -> Iterator[Case]:
    names = [7, "", " ", "qwen 2.5", "qwen\n", "\x00", "\u200b", "m" * 300, ["qwen"], {"n": 1}, True, None]
    for i, model in enumerate(names):
        yield Case(f"{api} model #{i}", api, _dump(_changed(base, ("model",), model)), param="model")


def _huge(api: str, base: dict[str, Any]) -> Iterator[Case]:
    body = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"a" * LIMITS.max_body_bytes + b'"}]}'
    yield Case(f"{api} body over the limit", api, body, 413)
    pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    yield Case(f"{api} chunked body over the limit", api, lambda: iter(pieces), 413)
    last = f"messages[{len(base['messages']) - 1}].content"
    over = LIMITS.max_message_chars + 1
    for n, ch in ((over, "a"), (over, "长"), (1_000_000, "a")):
        yield Case(f"{api} message of {n} {ch!r}", api, _dump(_last_text(api, ch * n)), param=last)
    wrapped = f"### Task:\nRespond.\n<context>文档</context>\n{'问' * over}"  # only the query counts
    yield Case(f"{api} RAG-wrapped query over the limit", api, _dump(_last_text(api, wrapped)), param=last)
    history = [{"role": r, "content": "史" * 30_000} for _ in range(20) for r in ("user", "assistant")]
    long = {**base, "messages": [*history, {"role": "user", "content": "总结一下"}]}
    yield Case(f"{api} history over max_prompt_chars", api, _dump(long), param="messages")


def _deep(api: str, base: dict[str, Any]) -> Iterator[Case]:
    for n in (MAX_DEPTH + 1, 500, 1_000, 10_000, 100_000):
        nested = {"array": "[" * n + "]" * n, "object": '{"a":' * n + "1" + "}" * n}
        for shape, text in nested.items():
            for where in ("options", "format", "x_extra", "tools"):
                raw = _dump({**base, where: "@@"}).replace(b'"@@"', text.encode())
                yield Case(f"{api} {shape} {n} deep in {where}", api, raw)
        yield Case(f"{api} {n} deep, no object", api, ("[" * n + "]" * n).encode())


def _utf8(api: str, base: dict[str, Any]) -> Iterator[Case]:
    bad_bytes = [b"\xff", b"\xc3\x28", b"\xe2\x28\xa1", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                 b"caf\xe9", b"\xe4\xbd"]  # fmt: skip
    for i, bad in enumerate(bad_bytes):
        for where, target in (("content", '"这张图里是哪里？"'), ("model", f'"{MODEL}"'), ("key", '"stream"')):
            raw = _dump(base).replace(target.encode(), target.encode()[:-1] + bad + b'"', 1)
            yield Case(f"{api} bad UTF-8 #{i} in {where}", api, raw)


def _surrogates(api: str, base: dict[str, Any]) -> Iterator[Case]:
    nested = ("options" if api == "ollama" else "stream_options", "x")
    places: list[Path] = [("model",), ("messages", 0, "content"), ("messages", 0, "role"), ("x_extra",), nested,
                          ("tools", 0, "function", "name")]  # fmt: skip
    for escape in ("\\ud800", "\\udfff", "\\udbff\\u0041", "\\ude00\\ud83d", "abc\\ud83d"):
        for where in places:
            raw = _dump(_changed(base, where, "@@")).replace(b"@@", escape.encode())
            yield Case(f"{api} {escape} in {param(where)}", api, raw, param=param(where))
        key = _dump(base).replace(b'"stream"', f'"{escape}"'.encode(), 1)
        yield Case(f"{api} {escape} in a key", api, key)


def _images(api: str, base: dict[str, Any]) -> Iterator[Case]:
    """Images Ollama could not decode: tianma answers for it, before the turn."""
    path: Path = ("messages", 3, "images", 0) if api == "ollama" else ("messages", 1, "content", 1, "image_url", "url")
    prefix = "" if api == "ollama" else "data:image/png;base64,"
    for i, data in enumerate(["", "not base64!", "iVBORw0KGgo", "iVBORw0K Ggo=", "长图", "=" * 8]):
        yield Case(f"{api} image #{i}", api, _dump(_changed(base, path, prefix + data)), param=param(path))
    if api == "openai":
        for i, url in enumerate(["https://example.com/a.png", "data:image/svg+xml,<svg/>", "data:image/png;base64",
                                 "file:///etc/passwd", ""]):  # fmt: skip
            yield Case(f"{api} image URL #{i}", api, _dump(_changed(base, path, url)), param=param(path))
        bare = path[:-1]
        yield Case(f"{api} bare image URL", api, _dump(_changed(base, bare, "https://example.com/a.png")),
                   param=param(bare))


MALFORMED = b'{"model": "qwen2.5:7b", "messages": [{"role": "user", "content": "hi"}'


def _content_types(api: str, base: dict[str, Any]) -> Iterator[Case]:
    for ctype in (None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                  "application/json; charset=utf-16", "application/xml"):  # fmt: skip
        yield Case(f"{api} {ctype} body", api, MALFORMED, headers={"Content-Type": ctype} if ctype else {})
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    yield Case(f"{api} a form", api, b"model=x&messages=y", headers=form)
    browser = {"Content-Type": "text/plain", "Sec-Fetch-Site": "same-origin"}
    yield Case(f"{api} a browser's text/plain", api, _dump(base), 415, headers=browser)
    other_site = {"Content-Type": "application/json", "Origin": "https://evil.example"}
    yield Case(f"{api} another site", api, _dump(base), 403, headers=other_site)


def _not_json(api: str, base: dict[str, Any]) -> Iterator[Case]:
    for raw in (b"", b"   ", b"\n", b"null", b"[]", b"[{}]", b"1", b'"s"', b"true", MALFORMED, _dump(base) + b" x",
                b"{'model': 'x'}", b'{"model": NaN}', b'{"model": "x", "temperature": Infinity}', b'{"a": 1 /* c */}',
                b'{"a": ' + b"1" * 5000 + b"}", b"\xef\xbb\xbf", b'{"model"}'):  # fmt: skip
        yield Case(f"{api} body {raw[:24]!r}", api, raw)


CATEGORIES: dict[str, Callable[[str, dict[str, Any]], Iterator[Case]]] = {
    "wrong_type": _wrong_types, "missing": _missing, "model": _models, "huge": _huge, "deep": _deep,
    "utf8": _utf8, "surrogate": _surrogates, "content_type": _content_types, "not_json": _not_json,
    "image": _images,
}  # fmt: skip
CASES = {name: [case for api, base in BASES.items() for case in make(api, base)] for name, make in CATEGORIES.items()}


@dataclass
class Fuzzed:
    runtime: Runtime
    standin: OllamaStandin
    client: httpx.Client

    def recorded(self) -> tuple[int, int]:
        """Records in the store, requests Ollama got."""
        return self.runtime.memory.store.count(), len(self.standin.requests)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, e5: Embedder) -> Iterator[Fuzzed]:
    """One server (default limits) over a stand-in Ollama for the whole suite."""
    with ExitStack() as stack:
        env = stack.enter_context(pytest.MonkeyPatch.context())
        for name in [n for n in os.environ if n.startswith("TIANMA_")]:
            env.delenv(name)
        standin = stack.enter_context(OllamaStandin())
        settings = Settings(home=tmp_path_factory.mktemp("fuzz"), ollama={"base_url": standin.base_url},
                            learning={"model_every_messages": 0})  # fmt: skip
        rt = Runtime(settings, chat_model=ScriptedChatModel(replies=["好的。"]), embedder=e5)
        stack.callback(rt.close)
        url = stack.enter_context(ServerThread(create_app(rt, scheduler=False)))
        yield Fuzzed(rt, standin, stack.enter_context(httpx.Client(base_url=url, timeout=60)))


def _problems(s: Fuzzed, case: Case) -> list[str]:
    before = s.recorded()
    content = case.content if isinstance(case.content, bytes) else case.content()
    r = s.client.post(PATHS[case.api], content=content, headers=case.headers)
    found = [] if r.status_code == case.status else [f"status {r.status_code}, not {case.status}: {r.text[:300]}"]
    try:
        error = r.json()["error"]
    except (ValueError, KeyError, TypeError):
        return [*found, f"not an error in JSON: {r.headers.get('content-type')} {r.text[:300]!r}"]
    if case.api == "openai":
        if not (isinstance(error, dict) and set(error) == {"message", "type", "param", "code"}
                and error["type"] == "invalid_request_error" and isinstance(error["message"], str)):  # fmt: skip
            found.append(f"not OpenAI's error shape: {error!r:.300}")
        elif case.param is not None and error["param"] != case.param:
            found.append(f"param {error['param']!r}, not {case.param!r}: {error['message']:.200}")
    elif not (isinstance(error, str) and error and set(r.json()) <= {"error", "hint"}):
        found.append(f"not Ollama's error shape: {r.text[:300]}")
    elif case.param is not None and case.param not in error:
        found.append(f"{case.param!r} not named: {error:.200}")
    if s.recorded() != before:
        found.append(f"recorded or asked Ollama: {before} → {s.recorded()}")
    return found


def _answers(s: Fuzzed, api: str, text: str) -> None:
    before = s.runtime.memory.store.count()
    r = s.client.post(PATHS[api], json=_last_text(api, text))
    assert r.status_code == 200, r.text
    assert r.headers["x-tianma-event-id"] and s.runtime.memory.store.count() > before


def test_the_suite_is_big_enough() -> None:
    assert sum(len(cases) for cases in CASES.values()) >= 200
    assert all(CASES.values()) and len(CASES) == 10


@pytest.mark.parametrize("category", sorted(CASES))
def test_malformed_requests_get_a_clear_answer_and_record_nothing(fuzzed: Fuzzed, category: str) -> None:
    failures = {case.name: found for case in CASES[category] if (found := _problems(fuzzed, case))}
    assert not failures, "\n".join(f"{name}: {'; '.join(found)}" for name, found in failures.items())
    for api in BASES:
        _answers(fuzzed, api, f"{category} 之后还在吗？")


@pytest.mark.parametrize("api", sorted(BASES))
def test_what_clients_send_is_accepted(fuzzed: Fuzzed, api: str) -> None:
    base = BASES[api]
    extra = {**base, "x_client": {"nested": [[{"deep": "ok"}] * 2] * 2}, "metadata": {"chat_id": f"{api}-extra"},
             "user": "u-1", "logprobs": False, "truncate": True}  # fmt: skip
    extra["messages"] = [{**m, "x_field": 1} for m in base["messages"]]
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(30):  # a deep JSON schema is still fine
        schema = {"type": "object", "properties": {"a": schema}}
    schema_at = ("format",) if api == "ollama" else ("response_format", "json_schema", "schema")
    deep = _changed(base, schema_at, schema)
    pair = _last_text(api, "表情 \ud83d\ude00 也行")
    controls = _last_text(api, "零\x00字节 \x1b[31m \u202e \U0010ffff")  # odd, but text
    bodies = [base, extra, deep, pair, controls]
    if api == "openai":
        bare_url = _changed(base, ("messages", 1, "content", 1, "image_url"), f"data:image/png;base64,{IMAGE}")
        parts = [{"type": "input_audio", "input_audio": {}}, {"type": "text", "text": "听"}]  # a kind passed over
        bodies += [bare_url, _changed(base, ("messages", 1, "content"), parts)]
    for body in bodies:
        before = fuzzed.runtime.memory.store.count()
        r = fuzzed.client.post(PATHS[api], content=json.dumps(body).encode())  # the pair as \\ud83d\\ude00
        assert r.status_code == 200, r.text
        assert fuzzed.runtime.memory.store.count() > before


def test_an_unknown_model_is_ollamas_404_before_the_turn(fuzzed: Fuzzed) -> None:
    """A well-formed name Ollama does not have (by its ``/api/tags``) is refused up front, in the
    API's shape: nothing recorded, no chat sent to Ollama."""
    for api in BASES:
        before, chats = fuzzed.runtime.memory.store.count(), len(fuzzed.standin.requests_to("/api/chat"))
        r = fuzzed.client.post(PATHS[api], json=_changed(_last_text(api, "在吗"), ("model",), "llama9:70b"))
        assert r.status_code == 404
        assert "llama9:70b" in (r.json()["error"] if api == "ollama" else r.json()["error"]["message"])
        if api == "openai":
            assert (r.json()["error"]["param"], r.json()["error"]["code"]) == ("model", "model_not_found")
        assert fuzzed.runtime.memory.store.count() == before
        assert len(fuzzed.standin.requests_to("/api/chat")) == chats
