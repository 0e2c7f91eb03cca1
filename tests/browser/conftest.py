"""Real headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright) against the real
app served by uvicorn on a free loopback port — and against the real Open WebUI in front of it
(:mod:`tests.browser.openwebui`); every page visited is kept as a screenshot."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.browser.openwebui import (
    ARTIFACTS,
    OPENWEBUI_VERSION,
    OpenWebUI,
    RecordingApp,
    Script,
    openwebui_venv,
    run_openwebui,
)
from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel, learning_model
from tests.unit.serve.ui.seed import SETTINGS, Seeded, seed_user
from tianma import Runtime, Settings
from tianma.serve import create_app
from tianma.storage.protocols import Embedder
from tianma.testing.ollama_standin import OllamaStandin
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


CHROMIUM_HINT = "install it (apt-get install chromium fonts-noto-cjk) to run the browser tests"
CHROMIUM_CI = ".ci/run installs chromium and fonts-noto-cjk"


def _unavailable(reason: str, hint: str = CHROMIUM_HINT, ci: str = CHROMIUM_CI) -> NoReturn:
    """Skip on a developer machine; in CI (``CI=true``) the browser tests must run, so fail."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} — CI must run the browser tests ({ci})")
    pytest.skip(f"{reason}; {hint}")


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


@pytest.fixture(scope="module")
def owui(
    request: pytest.FixtureRequest, browser: Any, e5: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OpenWebUI]:
    """The real Open WebUI → ``tianma serve`` (a real runtime over a tmp home, no scheduler) → the
    Ollama stand-in, and one Chromium page (en-US: the labels its source has) on Open WebUI, not
    yet signed up. One Open WebUI (~20 s to start) serves every test of a module, with the
    module's ``OPENWEBUI_ADMIN_ENV`` (settings its admin chose) if it has one; its log and the
    requests it made go to ``test-artifacts/<module>-openwebui.log`` / ``-requests.json``. A
    module with ``TIANMA_ON_POSTGRES = True`` (and the PostgreSQL fixtures imported) keeps tianma's
    records, window and job table in a throwaway PostgreSQL."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    extra_env: dict[str, str] = getattr(request.module, "OPENWEBUI_ADMIN_ENV", {})
    sql: dict[str, str] = {}
    if getattr(request.module, "TIANMA_ON_POSTGRES", False):  # the module imports the PostgreSQL fixtures
        cluster = request.getfixturevalue("postgres_cluster")
        cluster.reset()
        sql = {"url": cluster.url}
    venv = openwebui_venv()
    if not (venv / "bin" / "open-webui").is_file():
        _unavailable(
            f"Open WebUI {OPENWEBUI_VERSION} is not installed in {venv}",
            hint="run .ci/openwebui.sh (once: ~2 min, ~7 GB) to run tests/browser/test_openwebui.py",
            ci=".ci/run runs .ci/openwebui.sh",
        )
    workdir = tmp_path_factory.mktemp("openwebui")
    script = Script()
    with ExitStack() as stack:
        standin = stack.enter_context(OllamaStandin(reply=script))
        with pytest.MonkeyPatch.context() as env:  # what tests/conftest.py's _isolated_env does per test
            for name in [n for n in os.environ if n.startswith("TIANMA_")]:
                env.delenv(name)
            runtime = Runtime(Settings(home=workdir / "tianma", ollama={"base_url": standin.base_url}, sql=sql),
                              chat_model=ScriptedChatModel(replies=["好的。"]), embedder=e5)  # fmt: skip
        stack.callback(runtime.close)
        recorder = RecordingApp(create_app(runtime, scheduler=False))
        tianma_url = stack.enter_context(ServerThread(recorder))
        log = ARTIFACTS / f"{name}-openwebui.log"
        webui = stack.enter_context(run_openwebui(venv, tianma_url, workdir, log, extra_env=extra_env))
        context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 860})
        stack.callback(context.close)
        owui = OpenWebUI(
            webui.url, tianma_url, runtime, standin, script, recorder, context.new_page(), webui.log
        )

        def this_openwebui_only(route: Any) -> None:
            if route.request.url.startswith(webui.url + "/"):
                route.continue_()
            else:
                owui.blocked.append(route.request.url)
                route.abort()

        context.route("**/*", this_openwebui_only)
        stack.callback(owui.dump, ARTIFACTS / f"{name}-openwebui-requests.json")
        yield owui
