"""A chat naming a model Ollama lacks is refused before its turn (tianma.serve.models)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import ollama
import pytest

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma.errors import ModelNotFoundError
from tianma.serve.models import InstalledModels, model_key
from tianma.serve.upstream import Upstream
from tianma.testing.ollama_standin import OllamaStandin

UNKNOWN = "llama9:70b"
HINT = f"the model is not installed in Ollama: run `ollama pull {UNKNOWN}` there"


def _chat(api: str, model: str, text: str = "在吗") -> tuple[str, dict[str, Any]]:
    path = "/api/chat" if api == "ollama" else "/v1/chat/completions"
    return path, {"model": model, "stream": False, "messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_an_unknown_model_is_a_404_before_the_turn(serve: ServeFactory, api: str) -> None:
    s = serve()
    path, body = _chat(api, UNKNOWN)
    r = httpx.post(f"{s.url}{path}", json=body)
    assert r.status_code == 404
    if api == "ollama":
        assert r.json() == {"error": f"model '{UNKNOWN}' not found", "hint": HINT}
    else:
        assert r.json() == {"error": {"message": f"model '{UNKNOWN}' not found ({HINT})",
                                      "type": "invalid_request_error", "param": "model", "code": "model_not_found"}}  # fmt: skip
    assert "x-tianma-event-id" not in r.headers
    assert s.runtime.memories("me", "event") == []  # nothing recorded
    assert s.runtime.memory.store.count() == 0
    assert s.chat_bodies() == []  # Ollama was never asked to chat
    assert len(s.standin.requests_to("/api/tags")) == 1


def test_the_official_client_gets_ollamas_own_404(serve: ServeFactory) -> None:
    s = serve()
    with pytest.raises(ollama.ResponseError) as err:
        s.ollama().chat(model=UNKNOWN, messages=[{"role": "user", "content": "hi"}])
    assert (err.value.status_code, err.value.error) == (404, f"model '{UNKNOWN}' not found")
    assert s.runtime.memories("me", "event") == []


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_known_models_with_and_without_latest_are_served(serve: ServeFactory, api: str) -> None:
    s = serve(OllamaStandin(models=[MODEL, "llama3.2:latest"]).start())
    try:
        for i, model in enumerate([MODEL, "llama3.2", "llama3.2:latest", "Llama3.2"]):
            path, body = _chat(api, model, f"第{i}句")
            r = httpx.post(f"{s.url}{path}", json=body)
            assert r.status_code == 200, (model, r.text)
            assert s.chat_bodies()[-1]["model"] == model  # sent on as the client named it
        assert len(s.runtime.memories("me", "event")) == 4
        assert len(s.standin.requests_to("/api/tags")) == 1  # one read, cached
    finally:
        s.standin.close()


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_a_model_pulled_after_the_list_was_read_works_at_once(serve: ServeFactory, api: str) -> None:
    s = serve()
    path, body = _chat(api, MODEL, "一")
    assert httpx.post(f"{s.url}{path}", json=body).status_code == 200  # the list is now cached
    s.standin.models.append("llama3.2:latest")  # `ollama pull llama3.2`
    path, body = _chat(api, "llama3.2", "二")
    r = httpx.post(f"{s.url}{path}", json=body)
    assert r.status_code == 200, r.text
    assert len(s.standin.requests_to("/api/tags")) == 2  # the miss read the list again
    assert {e.content for e in s.runtime.memories("me", "event")} == {"一", "二"}


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_ollama_down_is_not_a_404_and_the_message_is_kept(serve: ServeFactory, api: str) -> None:
    standin = OllamaStandin().start()
    s = serve(standin)
    standin.close()  # nothing listens on its port now
    path, body = _chat(api, UNKNOWN, "你好")
    r = httpx.post(f"{s.url}{path}", json=body)
    assert r.status_code == 502  # the turn ran and met Ollama down, as before
    message = r.json()["error"] if api == "ollama" else r.json()["error"]["message"]
    assert "ollama serve" in (r.json().get("hint", "") if api == "ollama" else message)
    assert [e.content for e in s.runtime.memories("me", "event")] == ["你好"]


# -- the cache itself ---------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_apart(coroutine: Any) -> Any:
    """``asyncio.run`` in a thread of its own: under ``CI=true`` the browser tests' Playwright
    keeps an event loop running in the main thread, where ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _models(handler: Any, clock: _Clock | None = None) -> tuple[InstalledModels, list[str]]:
    """An InstalledModels over a mock Ollama answering ``/api/tags`` with ``handler``; the paths it got."""
    seen: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        answer: httpx.Response = handler(request)
        return answer

    upstream = Upstream("http://ollama.invalid:11434", 5.0)
    upstream.aio = httpx.AsyncClient(base_url=upstream.base_url, transport=httpx.MockTransport(record))
    return InstalledModels(upstream, clock=clock or _Clock()), seen


def _tags(*names: str) -> Any:
    return lambda _r: httpx.Response(200, json={"models": [{"name": n, "model": n} for n in names]})


async def _check(models: InstalledModels, *names: str) -> list[str]:
    """The names refused, in order."""
    refused = []
    for name in names:
        try:
            await models.check(name)
        except ModelNotFoundError as exc:
            assert (exc.status, exc.param, exc.code) == (404, "model", "model_not_found")
            refused.append(name)
    await models.upstream.aclose()
    return refused


def test_names_match_as_ollama_matches_them() -> None:
    latest = model_key("qwen2.5:latest")
    assert model_key("qwen2.5") == latest == model_key("registry.ollama.ai/library/Qwen2.5")
    assert model_key("qwen2.5:7b") != model_key("qwen2.5")
    assert model_key("me/tuned") == "registry.ollama.ai/me/tuned:latest"
    assert model_key("localhost:5000/me/tuned:q4") == "localhost:5000/me/tuned:q4"


def test_the_list_is_cached_and_read_again_when_stale_or_missing_a_name() -> None:
    clock = _Clock()
    models, seen = _models(_tags("qwen2.5:7b", "llama3.2:latest"), clock)

    async def run() -> list[str]:
        refused = []
        for name in ("qwen2.5:7b", "llama3.2", "qwen2.5:7b"):
            await models.check(name)
        assert len(seen) == 1
        clock.now += 31  # stale: the next check reads the list again
        await models.check("qwen2.5:7b")
        assert len(seen) == 2
        refused += await _check(models, "gemma3")  # a miss reads it again at once
        assert len(seen) == 3
        return refused

    assert run_apart(run()) == ["gemma3"]


def test_concurrent_misses_share_one_read() -> None:
    models, seen = _models(_tags("qwen2.5:7b"))

    async def run() -> list[BaseException | None]:
        results = await asyncio.gather(*(models.check(f"nope{i}") for i in range(8)), return_exceptions=True)
        await models.upstream.aclose()
        return list(results)

    results = run_apart(run())
    assert all(isinstance(r, ModelNotFoundError) for r in results)
    assert len(seen) == 1


@pytest.mark.parametrize("answer", [
    httpx.Response(500, json={"error": "boom"}),
    httpx.Response(200, content=b"{not json"),
    httpx.Response(200, json=["not", "an", "object"]),
    httpx.Response(200, json={"models": [1, 2]}),
], ids=["500", "not-json", "a-list", "odd-rows"])  # fmt: skip
def test_an_unreadable_list_refuses_nothing(answer: httpx.Response) -> None:
    models, seen = _models(lambda _r: answer)
    assert run_apart(_check(models, "qwen2.5:7b", UNKNOWN)) == []
    assert len(seen) == 2  # a failed read is not cached


def test_a_timeout_refuses_nothing() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    models, _seen = _models(slow)
    assert run_apart(_check(models, UNKNOWN)) == []


def test_a_model_pinned_by_digest_is_left_to_ollama() -> None:
    models, seen = _models(_tags("qwen2.5:7b"))
    assert run_apart(_check(models, "qwen2.5@sha256:" + "0" * 64)) == []
    assert seen == []
