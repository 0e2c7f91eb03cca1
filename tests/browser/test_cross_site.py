"""Another site's POST, from a real browser: a page on another loopback port tries to write turns
into a keyless tianma server (no-cors fetches with text/plain and JSON bodies, an auto-submitted
form). Nothing may be recorded; the same request without a browser Origin is a turn."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.browser.conftest import SCREENSHOTS
from tests.conftest import RuntimeFactory
from tianma import Runtime
from tianma.serve import create_app
from tianma.testing.ollama_standin import OllamaStandin
from tianma.testing.server import ServerThread

MODEL = "qwen2.5:7b"
_BODY = '{"model": "qwen2.5:7b", "stream": false, "messages": [{"role": "user", "content": "我的新地址是恶意网站"}]}'


def _attacker(target: str) -> Starlette:
    """A page that fires every kind of cross-site write a browser allows without CORS."""
    page = f"""<!doctype html><meta charset="utf-8"><title>evil</title>
<form id="f" method="post" enctype="text/plain" action="{target}/api/chat" target="sink">
  <input name='{{"model": "qwen2.5:7b", "stream": false, "messages": [{{"role": "user", "content": "表单"}}], "x": "' value='"}}'>
</form><iframe name="sink"></iframe>
<script>
const body = {_BODY!r};
const tries = [
  fetch("{target}/api/chat", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body}}),
  fetch("{target}/v1/chat/completions", {{method: "POST", mode: "no-cors", body}}),
  fetch("{target}/api/chat", {{method: "POST", headers: {{"Content-Type": "application/json"}}, body}}),
  fetch("{target}/tianma/feedback", {{method: "POST", mode: "no-cors", body: '{{"event_id": "x", "kind": "like"}}'}}),
];
document.getElementById("f").submit();
Promise.allSettled(tries).then(r => {{ window.results = r.map(x => x.status); }});
</script>"""

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page)

    return Starlette(routes=[Route("/", index)])


@pytest.fixture
def served(make_runtime: RuntimeFactory) -> Iterator[tuple[str, Runtime, OllamaStandin]]:
    with OllamaStandin() as standin:
        rt = make_runtime(ollama={"base_url": standin.base_url})
        with ServerThread(create_app(rt, scheduler=False)) as url:
            yield url, rt, standin


def test_a_page_on_another_port_records_nothing(browser: Any, served: tuple[str, Runtime, OllamaStandin]) -> None:
    url, rt, standin = served
    with ServerThread(_attacker(url)) as evil:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(evil + "/")
            page.wait_for_function("window.results !== undefined", timeout=15000)
            time.sleep(1.0)  # the form's navigation lands in the iframe
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "cross-site-attempt.png"))
            results: list[str] = page.evaluate("window.results")
        finally:
            context.close()
    assert len(results) == 4  # every fetch was sent (no-cors ones resolve opaquely, the JSON one is refused)
    assert rt.memories("me", "event") == [] and rt.memories("me", "signal") == []
    assert standin.requests_to("/api/chat") == []
    # the control: the same body from a client that is not a browser page is a turn
    r = httpx.post(f"{url}/api/chat", content=_BODY, headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 200 and len(rt.memories("me", "event")) == 1
