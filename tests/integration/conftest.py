"""Integration fixtures: a local stand-in for the Ollama daemon."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tianma.testing.ollama_standin import OllamaStandin


@pytest.fixture
def no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours a developer's HTTP(S)_PROXY even for 127.0.0.1; keep loopback direct."""
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")


@pytest.fixture
def ollama_standin(no_proxy_for_loopback: None) -> Iterator[OllamaStandin]:
    """A running Ollama stand-in (``.base_url``, ``.models``, ``.reply``, ``.delay``, ``.requests``)."""
    with OllamaStandin() as standin:
        yield standin
    assert standin.errors == [], f"the stand-in failed while serving: {standin.errors!r}"
