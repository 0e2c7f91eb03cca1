"""Tracing SDK setup, called only at the edges (CLI, server): nothing leaves by default."""

from __future__ import annotations

import threading
import weakref
from datetime import timedelta
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from tianma.errors import ConfigError
from tianma.settings import TelemetrySettings
from tianma.telemetry.span_store import SpanTarget, SqlSpanExporter

_local_stores: weakref.WeakKeyDictionary[TracerProvider, set[SpanTarget]] = weakref.WeakKeyDictionary()
"""Span stores each provider already writes to (configure_tracing may be called again)."""
_local_lock = threading.Lock()
LOCAL_DELAY_MS = 1000
"""Spans reach the local store within about a second of their turn (the SDK default is 5 s)."""


def build_exporter(settings: TelemetrySettings) -> SpanExporter | None:
    """The exporter the settings ask for, or None.

    Raises:
        ConfigError: OTLP was chosen but its extra is not installed or no endpoint is set.
    """
    if settings.exporter == "console":
        return ConsoleSpanExporter()
    if settings.exporter == "otlp":
        if not settings.otlp_endpoint:
            raise ConfigError(
                "setting telemetry.otlp_endpoint (TIANMA_TELEMETRY__OTLP_ENDPOINT) is required for otlp"
            )
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigError("telemetry.exporter=otlp needs `pip install 'tianma[otlp]'`") from exc
        exporter: SpanExporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint)
        return exporter
    return None


def add_local_store(provider: TracerProvider, target: SpanTarget, settings: TelemetrySettings) -> None:
    """Make ``provider`` write finished spans to ``target`` — a SQLite file or a database URL —
    once per target."""
    key: SpanTarget = target.expanduser().resolve() if isinstance(target, Path) else target
    with _local_lock:
        attached = _local_stores.setdefault(provider, set())
        if key in attached:
            return
        exporter = SqlSpanExporter(key, retention=timedelta(days=settings.local_retention_days))
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=LOCAL_DELAY_MS))
        attached.add(key)


def configure_tracing(settings: TelemetrySettings, local_store: SpanTarget | None = None) -> trace.TracerProvider:
    """Install a global tracer provider (real trace ids; exporter only when configured).

    ``local_store``: also keep every span in this SQLite file or database (``Settings.spans_target``
    when ``telemetry.local_store`` is on) for the review UI, pruned after
    ``telemetry.local_retention_days``. An application that already installed its own provider
    keeps it; the local store is added to it when it is an SDK provider.
    """
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        if local_store is not None and isinstance(current, TracerProvider):
            add_local_store(current, local_store, settings)
        return current
    provider = TracerProvider(resource=Resource.create({"service.name": "tianma"}))
    exporter = build_exporter(settings)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    if local_store is not None:
        add_local_store(provider, local_store, settings)
    trace.set_tracer_provider(provider)
    return provider
