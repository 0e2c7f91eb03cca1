"""A tianma server over a real runtime, in front of a stand-in Ollama, on a real socket."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import ollama
import pytest
from starlette.applications import Starlette

from tests.conftest import RuntimeFactory
from tianma import Runtime
from tianma.serve import create_app
from tianma.testing.ollama_standin import OllamaStandin
from tianma.testing.server import ServerThread

MODEL = "qwen2.5:7b"


@dataclass
class Served:
    url: str
    runtime: Runtime
    standin: OllamaStandin
    app: Starlette
    clients: list[ollama.Client] = field(default_factory=list)

    def ollama(self) -> ollama.Client:
        """The official client pointed at the proxy (closed with the server)."""
        client = ollama.Client(host=self.url)
        self.clients.append(client)
        return client

    def chat_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests the stand-in received, oldest first."""
        return [r.body or {} for r in self.standin.requests_to("/api/chat")]


ServeFactory = Callable[..., Served]


@pytest.fixture
def serve(make_runtime: RuntimeFactory) -> Iterator[ServeFactory]:
    """``serve(**settings)`` → a started proxy (no scheduler) over a fresh stand-in Ollama
    (``admin_token=`` opens its admin API)."""
    with ExitStack() as stack:

        def start(standin: OllamaStandin | None = None, admin_token: str | None = None, **settings: Any) -> Served:
            upstream = standin or stack.enter_context(OllamaStandin())
            settings.setdefault("ollama", {})["base_url"] = upstream.base_url
            rt = make_runtime(**settings)
            app = create_app(rt, scheduler=False, admin_token=admin_token)
            url = stack.enter_context(ServerThread(app))
            served = Served(url, rt, upstream, app)
            stack.callback(lambda: [c.close() for c in served.clients])
            return served

        yield start
