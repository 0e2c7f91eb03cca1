"""The real Open WebUI (0.12.4, in its own venv: ``.ci/openwebui.sh``) in front of ``tianma serve``,
which is in front of the Ollama stand-in — the whole chain on loopback, for tests/browser/test_openwebui.py.

What Open WebUI is told (environment variables, read from its ``env.py``/``config.py``) is
:data:`OPENWEBUI_ENV`; the README's Open WebUI section lists the same settings.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tianma import Runtime
from tianma.storage.records import MemoryRecord
from tianma.testing.ollama_standin import OllamaStandin

OPENWEBUI_VERSION = "0.12.4"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
OPENWEBUI_ENV = {
    "ENABLE_FORWARD_USER_INFO_HEADERS": "true",  # X-OpenWebUI-Chat-Id (one dialogue per chat) and -User-*
    "ENABLE_OPENAI_API": "false",  # only the Ollama connection: tianma
    "OFFLINE_MODE": "true",  # no version check, no model or pip downloads
    "HF_HUB_OFFLINE": "1",
    "RAG_EMBEDDING_ENGINE": "ollama",  # no sentence-transformers model to download at start
    "ANONYMIZED_TELEMETRY": "false",  # chromadb
    "DO_NOT_TRACK": "true",
    "SCARF_NO_ANALYTICS": "true",
    "WEBUI_SECRET_KEY": "tianma-test-secret-key-32-bytes-long",  # fixed: no .webui_secret_key file written
    # a request for anywhere but loopback goes to a closed loopback port and fails at once
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}
"""Open WebUI's settings in the test, besides ``DATA_DIR``, ``PORT`` and ``OLLAMA_BASE_URL``."""

ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
                   Awaitable[None]]  # fmt: skip


def openwebui_venv() -> Path:
    """Where ``.ci/openwebui.sh`` puts Open WebUI's venv."""
    default = Path.home() / ".cache" / "tianma" / f"openwebui-{OPENWEBUI_VERSION}"
    return Path(os.environ.get("TIANMA_OPENWEBUI_VENV") or default)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Exchange:
    """One HTTP request tianma received (from Open WebUI's backend) and how it answered."""

    method: str
    path: str
    headers: dict[str, str]
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)


class RecordingApp:
    """Wraps tianma's ASGI app and keeps each request's headers and the answer's headers: what the
    Ollama stand-in cannot see (it records bodies only)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:  # fmt: skip
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        exchange = Exchange(str(scope["method"]), str(scope["path"]), _headers(scope["headers"]))
        self.exchanges.append(exchange)

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                exchange.status = int(message["status"])
                exchange.response_headers = _headers(message.get("headers", []))
            await send(message)

        await self.app(scope, receive, sending)

    def turns(self, chat_id: str) -> list[Exchange]:
        """Requests of that Open WebUI chat that tianma answered as turns (they name an event)."""
        return [e for e in self.exchanges if e.path == "/api/chat" and e.headers.get("x-openwebui-chat-id") == chat_id
                and "x-tianma-event-id" in e.response_headers]  # fmt: skip


def _headers(raw: Any) -> dict[str, str]:
    return {bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1") for k, v in raw}


@dataclass
class OpenWebUIProcess:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@contextmanager
def run_openwebui(venv: Path, ollama_url: str, workdir: Path, log: Path, startup_s: float = 180.0,
                  extra_env: Mapping[str, str] | None = None) -> Iterator[OpenWebUIProcess]:  # fmt: skip
    """Open WebUI as a subprocess on a free loopback port, healthy when yielded; its process group
    is killed afterwards. ``workdir`` holds its data (``DATA_DIR``) and is its ``HOME``;
    ``extra_env``: settings an admin chose besides :data:`OPENWEBUI_ENV`."""
    port = free_port()
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        **OPENWEBUI_ENV,
        **(extra_env or {}),
        "DATA_DIR": str(data),
        "PORT": str(port),
        "OLLAMA_BASE_URL": ollama_url,
    }
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [str(venv / "bin" / "open-webui"), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, process, log, startup_s)
        yield OpenWebUIProcess(url, process, log)
    finally:
        _stop(process)


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, startup_s: float) -> None:
    deadline = time.monotonic() + startup_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"Open WebUI exited with {process.returncode} while starting; see {log}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"Open WebUI was not healthy within {startup_s:.0f} s; see {log}")
        time.sleep(0.5)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to its process group, then SIGKILL to whatever is left of the group."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=15)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def wait_for(condition: Callable[[], Any], timeout_s: float = 20.0, what: str = "condition",
             pause: Callable[[float], None] = time.sleep) -> Any:  # fmt: skip
    """Poll until ``condition()`` is truthy; returns it."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        pause(0.05)


_HISTORY_USER = re.compile(r"<chat_history>\s*USER:\s*(.+)")
TITLE_MARK = "（标题）"
"""Ends every title the stand-in generates (Open WebUI first shows the user's message as the title)."""


@dataclass
class Script:
    """The stand-in model's answers: valid JSON for Open WebUI's background tasks (so its title,
    tags and follow-ups render), scripted replies for the user's messages."""

    replies: dict[str, list[str]] = field(default_factory=dict)
    """User message → its replies in order (the last one repeats)."""
    default: str = "好的。"

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        last = str(messages[-1].get("content") or "") if messages else ""
        queue = self.replies.get(last)  # a scripted message first, even one shaped like a task
        if not queue:
            return _task_answer(last) if last.lstrip().startswith("### Task:") else self.default
        return queue.pop(0) if len(queue) > 1 else queue[0]


def _task_answer(prompt: str) -> str:
    """What a model would answer to one of Open WebUI 0.12's task prompts (backend/open_webui/config.py)."""
    if "Generate a concise title" in prompt:
        first = _HISTORY_USER.search(prompt)
        return json.dumps(
            {"title": f"{first.group(1).strip()[:6] if first else ''}{TITLE_MARK}"}, ensure_ascii=False
        )
    if "broad tags" in prompt:
        return '{"tags": ["Food"]}'
    if "follow_ups" in prompt:
        return '{"follow_ups": []}'
    return "{}"


def task_kind(body: dict[str, Any] | None) -> str | None:
    """Which Open WebUI background task a chat request the stand-in received is, or None (a turn)."""
    messages = (body or {}).get("messages") or []
    last = str(messages[-1].get("content") or "") if messages else ""
    if not last.lstrip().startswith("### Task:"):
        return None
    for kind, marker in (
        ("title", "Generate a concise title"),
        ("tags", "broad tags"),
        ("follow_ups", "follow_ups"),
    ):
        if marker in last:
            return kind
    return "other"


@dataclass
class OpenWebUI:
    """Open WebUI in Chromium (one signed-in page), tianma behind it, the stand-in behind tianma."""

    url: str
    tianma_url: str
    runtime: Runtime
    standin: OllamaStandin
    script: Script
    recorder: RecordingApp
    page: Any
    log: Path
    blocked: list[str] = field(default_factory=list)
    """Requests the page tried to make to anywhere but this Open WebUI (aborted)."""

    def shot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"openwebui-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def sign_up(self, name: str, email: str, password: str) -> None:
        """The first account, as a new install offers it: the admin."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

        page = self.page
        page.goto(self.url + "/auth")
        page.get_by_role("button", name="Get started").click()
        page.fill("#name", name)
        page.fill("#email", email)
        page.fill("#password", password)
        self.shot("sign-up")
        page.get_by_role("button", name="Create Admin Account").click()
        page.wait_for_url(self.url + "/")
        whats_new = page.get_by_role("button", name="Okay, Let's Go!")
        with suppress(PlaywrightTimeoutError):  # the release notes a new account is shown first
            whats_new.click(timeout=10_000)

    def new_chat(self, model: str) -> None:
        """The "New Chat" button, then ``model`` picked in the model selector."""
        from playwright.sync_api import expect

        page = self.page
        page.locator('[aria-label="New Chat"]').filter(visible=True).first.click()  # the sidebar's pencil
        page.wait_for_url(self.url + "/")
        page.locator("#model-selector-model-button").click()
        page.locator(f'[role=option][data-value="{model}"]').click()
        expect(page.locator("#model-selector-model-button")).to_have_attribute(
            "aria-label", f"Selected model: {model}")  # fmt: skip

    def send(self, text: str) -> str:
        """Type ``text`` into the message box and send it; the chat's id (from its new URL)."""
        page = self.page
        page.locator("#chat-input").fill(text)
        page.locator("#send-message-button").click()
        page.wait_for_url(re.compile(re.escape(self.url) + r"/c/[0-9a-f-]+$"))
        return str(page.url.rsplit("/c/", 1)[1])

    def expect_reply(self, text: str, timeout_s: float = 20.0) -> None:
        """Wait until the last reply shown contains ``text``."""
        from playwright.sync_api import expect

        reply = self.page.locator("#response-content-container").last
        expect(reply).to_contain_text(text, timeout=timeout_s * 1000)

    def expect_title(self, text: str, timeout_s: float = 20.0) -> None:
        """Wait until the page's title (Open WebUI's chat title) contains ``text``."""
        from playwright.sync_api import expect

        expect(self.page).to_have_title(re.compile(re.escape(text)), timeout=timeout_s * 1000)

    def wait_for(self, condition: Callable[[], Any], what: str = "condition", timeout_s: float = 20.0) -> Any:
        """:func:`wait_for`, letting the page go on meanwhile: its requests pass this test's route
        (and so reach Open WebUI) only while Playwright is being called."""
        return wait_for(condition, timeout_s, what, pause=lambda s: self.page.wait_for_timeout(s * 1000))

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Open WebUI's own API as the signed-in user (the token its page keeps in localStorage)."""
        token = self.page.evaluate("() => localStorage.token")
        answer = httpx.request(method, self.url + path, json=body, headers={"Authorization": f"Bearer {token}"},
                               timeout=60)  # fmt: skip
        assert answer.status_code == 200, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer.json()

    def install_function(self, function_id: str, name: str, source: str) -> dict[str, Any]:
        """A Function created and switched on, as the admin does under Admin Panel → Functions."""
        self.api("POST", "/api/v1/functions/create",
                 {"id": function_id, "name": name, "content": source, "meta": {"description": name}})  # fmt: skip
        function: dict[str, Any] = self.api("POST", f"/api/v1/functions/id/{function_id}/toggle")
        return function

    def events(self, user: str = "me") -> list[MemoryRecord]:
        records: list[MemoryRecord] = self.runtime.memories(user, "event")
        return records

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body or {} for r in self.standin.requests_to("/api/chat")]

    def turn_bodies(self, text: str) -> list[dict[str, Any]]:
        """The chat requests for turns (not background tasks) whose last message is ``text``."""
        return [b for b in self.chat_bodies()
                if task_kind(b) is None and (b.get("messages") or [{}])[-1].get("content") == text]  # fmt: skip

    def dump(self, path: Path) -> None:
        """Every request tianma got (headers, and the headers it answered with) and every request
        the stand-in got (bodies; tool definitions by name only): what Open WebUI really sent."""
        standin = [
            {"method": r.method, "path": r.path, "body": _named_tools(r.body)} for r in self.standin.requests
        ]
        tianma = [vars(e) for e in self.recorder.exchanges]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"tianma": tianma, "standin": standin, "blocked": self.blocked},
                                   ensure_ascii=False, indent=1), encoding="utf-8")  # fmt: skip


def _named_tools(body: dict[str, Any] | None) -> dict[str, Any] | None:
    if not body or "tools" not in body:
        return body
    names = [str((t.get("function") or {}).get("name")) for t in body["tools"] if isinstance(t, dict)]
    return {**body, "tools": names}
