"""Real headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright) against the real
app served by uvicorn on a free loopback port; every page visited is kept as a screenshot."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, learning_model
from tests.unit.serve.ui.seed import SETTINGS, Seeded, seed_user
from tianma import Runtime
from tianma.serve import create_app
from tianma.testing.server import ServerThread

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def _unavailable(reason: str) -> NoReturn:
    """Skip on a developer machine; in CI (``CI=true``) the browser tests must run, so fail."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(
            f"{reason} — CI must run the browser tests (.ci/run installs chromium and fonts-noto-cjk)"
        )
    pytest.skip(f"{reason}; install it (apt-get install chromium fonts-noto-cjk) to run the browser tests")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One Chromium for the whole session (Playwright never downloads a browser here)."""
    if not CHROMIUM.is_file():
        _unavailable(f"{CHROMIUM} is missing")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Site:
    """The served app, its runtime, the seeded users, and a browser page signed in as someone."""

    url: str
    runtime: Runtime
    seeded: dict[str, Seeded]
    page: Any

    def go(self, path: str) -> None:
        self.page.goto(self.url + path)

    def shot(self, name: str) -> Path:
        """A full-page screenshot kept as a test artefact."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def login(self, key: str, shot: str | None = None) -> None:
        self.go("/ui/login")
        self.page.fill("#key", key)
        if shot:
            self.shot(shot)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(self.url + "/ui/")


@pytest.fixture
def site(make_runtime: RuntimeFactory, browser: Any) -> Iterator[Site]:
    """alice and bob seeded, the app on a real socket, a fresh browser context (zh-CN)."""
    rt = make_runtime(chat_model=learning_model("抱歉，我无法完成"), embedder=CharacterEmbedder(), **SETTINGS)
    seeded = {user: seed_user(rt, user) for user in ("alice", "bob")}
    with ServerThread(create_app(rt, scheduler=False)) as url:
        context = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 860})
        try:
            yield Site(url, rt, seeded, context.new_page())
        finally:
            context.close()
