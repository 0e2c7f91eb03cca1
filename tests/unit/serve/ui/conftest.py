"""The review UI over a real runtime with two users and an admin, through Starlette's TestClient."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, learning_model
from tests.unit.serve.ui.seed import SETTINGS, Seeded, seed_user, token_of
from tianma import Runtime
from tianma.serve import create_app


class UiClient:
    """A TestClient sending one key (``X-API-Key``), with the page's form token for POSTs."""

    def __init__(self, app: Starlette, key: str | None) -> None:
        headers = {"X-API-Key": key} if key else {}
        self.http = TestClient(app, base_url="http://localhost", headers=headers, follow_redirects=False)
        self._token: str | None = None

    def get(self, path: str, **params: Any) -> Any:
        return self.http.get(path, params=params)

    def token(self) -> str:
        if self._token is None:
            self._token = token_of(self.http.get("/ui/").text)
        return self._token

    def post(self, path: str, **data: Any) -> Any:
        return self.http.post(path, data={"token": self.token(), **data})


ClientFactory = Callable[[str | None], UiClient]


@pytest.fixture
def rt(make_runtime: RuntimeFactory) -> Runtime:
    return make_runtime(
        chat_model=learning_model("抱歉，我无法完成"), embedder=CharacterEmbedder(), **SETTINGS
    )


@pytest.fixture
def seeded(rt: Runtime) -> dict[str, Seeded]:
    return {user: seed_user(rt, user) for user in ("alice", "bob")}


@pytest.fixture
def app(rt: Runtime) -> Starlette:
    return create_app(rt, scheduler=False)


@pytest.fixture
def client(app: Starlette) -> Iterator[ClientFactory]:
    """``client("key-a")`` → alice's browser; ``client(None)`` → nobody's."""
    made: list[UiClient] = []

    def build(key: str | None) -> UiClient:
        made.append(UiClient(app, key))
        return made[-1]

    yield build
    for c in made:
        c.http.close()
