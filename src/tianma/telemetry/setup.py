"""Tracing SDK setup, called only at the edges (CLI, server): nothing leaves by default."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from tianma.errors import ConfigError
from tianma.settings import TelemetrySettings


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


def configure_tracing(settings: TelemetrySettings) -> trace.TracerProvider:
    """Install a global tracer provider (real trace ids; exporter only when configured).

    An application that already installed its own provider keeps it.
    """
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return current
    provider = TracerProvider(resource=Resource.create({"service.name": "tianma"}))
    exporter = build_exporter(settings)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider
