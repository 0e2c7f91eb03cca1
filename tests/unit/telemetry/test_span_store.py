"""The local span store: spans written to SQLite by an exporter, read back by SpanStore."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from tianma import ConfigError, Settings, load_settings
from tianma.settings import TelemetrySettings
from tianma.telemetry import semconv as sc
from tianma.telemetry import span_store
from tianma.telemetry.setup import configure_tracing
from tianma.telemetry.span_store import TURN_SPAN_NAME, SpanStore, SqlSpanExporter

T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


def ns(at: datetime) -> int:
    return int(at.timestamp() * 1e9)


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[SqlSpanExporter]:
    exp = SqlSpanExporter(tmp_path / "spans.db")
    yield exp
    exp.shutdown()


@pytest.fixture
def tracer(exporter: SqlSpanExporter) -> Iterator[trace.Tracer]:
    """A private provider writing synchronously to the exporter (the global one is the tests')."""
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test")
    provider.shutdown()


def fake_turn(
    tracer: trace.Tracer, user: str, event_id: str, dialogue: str = "d", at: datetime = T0, fail: bool = False
) -> str:
    """A turn-shaped trace: root, two node spans, a chat span; returns the trace id."""
    root = tracer.start_span(TURN_SPAN_NAME, start_time=ns(at))
    root.set_attribute(sc.GEN_AI_CONVERSATION_ID, dialogue)
    ctx = trace.set_span_in_context(root)
    node = tracer.start_span(sc.NODE_SPAN_PREFIX + "generate", context=ctx, start_time=ns(at) + 1_000)
    node.set_attribute(sc.TIANMA_USER_ID, user)
    node.set_attribute(sc.TIANMA_PROMPT_ITEMS, 3)
    chat = tracer.start_span(
        "chat m",
        context=trace.set_span_in_context(node),
        kind=trace.SpanKind.CLIENT,
        start_time=ns(at) + 2_000,
    )
    chat.set_attribute(sc.GEN_AI_RESPONSE_FINISH_REASONS, ("stop",))
    if fail:
        chat.set_status(Status(StatusCode.ERROR, "model down"))
    chat.add_event("note", {"k": "值"}, timestamp=ns(at) + 2_500)
    chat.end(end_time=ns(at) + 3_000_000)
    node.end(end_time=ns(at) + 4_000_000)
    capture = tracer.start_span(
        sc.NODE_SPAN_PREFIX + "capture_signals", context=ctx, start_time=ns(at) + 5_000_000
    )
    capture.set_attribute(sc.TIANMA_USER_ID, user)
    capture.set_attribute(sc.TIANMA_EVENT_ID, event_id)
    capture.end(end_time=ns(at) + 6_000_000)
    root.end(end_time=ns(at) + 10_000_000)
    return format(root.get_span_context().trace_id, "032x")


def test_a_trace_is_stored_and_read_back(tracer: trace.Tracer, exporter: SqlSpanExporter) -> None:
    trace_id = fake_turn(tracer, "u", "ev1", fail=True)
    store = SpanStore(exporter.path)
    spans = store.trace(trace_id)
    assert [s.name for s in spans] == [
        TURN_SPAN_NAME,
        "tianma.node generate",
        "chat m",
        "tianma.node capture_signals",
    ]
    root, node, chat, capture = spans
    assert root.parent_span_id is None and node.parent_span_id == root.span_id
    assert chat.parent_span_id == node.span_id and capture.parent_span_id == root.span_id
    assert root.start == T0 and root.duration_ms == pytest.approx(10.0)
    assert chat.kind == "CLIENT" and chat.status == "ERROR" and chat.status_message == "model down"
    assert chat.attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ["stop"]
    assert [(e.name, e.attributes) for e in chat.events] == [("note", {"k": "值"})]
    assert chat.events[0].time == T0 + timedelta(microseconds=2) and chat.events[0].time_ns == ns(T0) + 2_500
    assert node.attributes == {sc.TIANMA_USER_ID: "u", sc.TIANMA_PROMPT_ITEMS: 3}
    assert store.trace_of_event("ev1") == trace_id
    assert store.trace_of_event("nope") is None
    assert store.trace("0" * 32) == []


def test_recent_turns_newest_first_per_user(tracer: trace.Tracer, exporter: SqlSpanExporter) -> None:
    first = fake_turn(tracer, "u", "ev1", "d1", T0)
    fake_turn(tracer, "other", "ev2", "d9", T0 + timedelta(minutes=1))
    third = fake_turn(tracer, "u", "ev3", "d2", T0 + timedelta(minutes=2))
    store = SpanStore(exporter.path)
    rows = store.recent_turns("u", limit=10)
    assert [(r.trace_id, r.event_id, r.conversation_id, r.user_id) for r in rows] == [
        (third, "ev3", "d2", "u"),
        (first, "ev1", "d1", "u"),
    ]
    assert rows[0].start == T0 + timedelta(minutes=2)
    assert rows[0].duration_ms == pytest.approx(10.0) and rows[0].status == "UNSET"
    assert [r.event_id for r in store.recent_turns(None, limit=2)] == ["ev3", "ev2"]
    assert store.recent_turns("nobody", limit=10) == []


def test_a_missing_file_reads_as_empty(tmp_path: Path) -> None:
    store = SpanStore(tmp_path / "none.db")
    assert store.trace("ab" * 16) == [] and store.recent_turns(None, 5) == []
    assert store.trace_of_event("ev") is None
    assert not (tmp_path / "none.db").exists()


def test_prune_and_retention(tracer: trace.Tracer, exporter: SqlSpanExporter) -> None:
    now = datetime.now(UTC)
    fake_turn(tracer, "u", "old", at=now - timedelta(days=30))
    fake_turn(tracer, "u", "mid", at=now - timedelta(days=10))
    fake_turn(tracer, "u", "new", at=now - timedelta(minutes=1))
    store = SpanStore(exporter.path)
    assert exporter.prune(now - timedelta(days=20)) == 4
    assert [r.event_id for r in store.recent_turns(None, 10)] == ["new", "mid"]

    kept = SqlSpanExporter(exporter.path, retention=timedelta(days=5))  # prunes on start
    assert [r.event_id for r in store.recent_turns(None, 10)] == ["new"]
    kept.shutdown()


def test_retention_is_applied_while_exporting(
    tracer: trace.Tracer, exporter: SqlSpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = datetime.now(UTC)
    fake_turn(tracer, "u", "old", at=now - timedelta(days=30))
    exporter.retention = timedelta(days=14)
    fake_turn(tracer, "u", "new", at=now)
    store = SpanStore(exporter.path)
    assert len(store.recent_turns(None, 10)) == 2  # not an hour since the last prune
    monkeypatch.setattr(span_store, "PRUNE_EVERY_S", 0.0)
    fake_turn(tracer, "u", "newer", at=now)
    assert [r.event_id for r in store.recent_turns(None, 10)] == ["newer", "new"]


def test_a_shut_down_exporter_refuses_quietly(exporter: SqlSpanExporter) -> None:
    exporter.shutdown()
    exporter.shutdown()
    assert exporter.export([]) is SpanExportResult.FAILURE
    assert exporter.prune(T0) == 0
    assert exporter.force_flush()


def test_threads_export_while_another_reads(tracer: trace.Tracer, exporter: SqlSpanExporter) -> None:
    store = SpanStore(exporter.path)
    writers, turns = 4, 25
    done = threading.Event()
    errors: list[BaseException] = []
    seen: list[int] = []

    def write(w: int) -> None:
        try:
            for i in range(turns):
                fake_turn(tracer, f"u{w}", f"ev{w}-{i}", at=T0 + timedelta(seconds=i))
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        try:
            while not done.is_set():
                rows = store.recent_turns(None, 1000)
                seen.append(len(rows))
                for row in rows[:3]:
                    assert len(store.trace(row.trace_id)) == 4  # a root ends after its children
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    reader.join()
    assert errors == []
    assert len(store.recent_turns(None, 1000)) == writers * turns
    assert all(len(store.recent_turns(f"u{w}", 1000)) == turns for w in range(writers))
    assert seen == sorted(seen)
    assert store.trace_of_event("ev3-24") is not None


def test_configure_tracing_adds_the_store_to_an_sdk_provider_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    path = tmp_path / "home" / "spans.db"
    assert configure_tracing(TelemetrySettings(), local_store=path) is provider
    assert configure_tracing(TelemetrySettings(), local_store=path) is provider
    assert len(provider._active_span_processor._span_processors) == 1  # not twice for one file
    trace_id = fake_turn(provider.get_tracer("t"), "u", "ev")
    provider.force_flush()  # the BatchSpanProcessor's thread has written it
    assert SpanStore(path).trace_of_event("ev") == trace_id
    provider.shutdown()


def test_configure_tracing_without_a_provider_creates_one_with_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed: list[trace.TracerProvider] = []
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    monkeypatch.setattr(trace, "set_tracer_provider", installed.append)
    path = tmp_path / "spans.db"
    provider = configure_tracing(TelemetrySettings(), local_store=path)
    assert installed == [provider] and isinstance(provider, TracerProvider)
    fake_turn(provider.get_tracer("t"), "u", "ev")
    provider.shutdown()  # flushes
    assert [r.event_id for r in SpanStore(path).recent_turns("u", 5)] == ["ev"]


def test_configure_tracing_without_a_local_store_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    configure_tracing(TelemetrySettings())
    assert provider._active_span_processor._span_processors == ()
    provider.shutdown()


def test_settings(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    assert settings.spans_path == tmp_path / "spans.db"
    assert settings.telemetry.local_store is True and settings.telemetry.local_retention_days == 14
    with pytest.raises(ConfigError, match="local_retention_days"):
        load_settings(home=tmp_path, telemetry={"local_retention_days": 0})
