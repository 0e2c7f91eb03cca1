"""Span helpers used by library code (OTel API only; exporters are set up at the edges)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from tianma.guardrails.secrets import storable
from tianma.settings import Settings
from tianma.telemetry import semconv as sc

tracer = trace.get_tracer(sc.TRACER_NAME)
_ARM: ContextVar[tuple[str, str] | None] = ContextVar("tianma_experiment_arm", default=None)
"""The online experiment and arm serving the turn that runs in this context (None outside one)."""


@contextmanager
def serving_arm(experiment: str | None, arm: str | None) -> Iterator[None]:
    """Every span started inside (the turn's nodes, model call, embeddings, memory operations)
    carries ``tianma.experiment`` and ``tianma.arm`` (:func:`mark_arm`)."""
    token = _ARM.set((experiment, arm or "") if experiment else None)
    try:
        yield
    finally:
        _ARM.reset(token)


def mark_arm(span: Span) -> None:
    """Put the serving experiment and arm on ``span``, if a turn of an experiment runs."""
    serving = _ARM.get()
    if serving is not None:
        span.set_attribute(sc.TIANMA_EXPERIMENT, serving[0])
        span.set_attribute(sc.TIANMA_ARM, serving[1])


@contextmanager
def embedding_span(model: str, count: int) -> Iterator[Span]:
    """An ``embeddings {model}`` client span."""
    with tracer.start_as_current_span(f"embeddings {model}", kind=SpanKind.CLIENT) as span:
        mark_arm(span)
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, "embeddings")
        span.set_attribute(sc.GEN_AI_REQUEST_MODEL, model)
        span.set_attribute(sc.TIANMA_EMBED_COUNT, count)
        yield span


@contextmanager
def memory_span(operation: str, store_id: str, count: int | None = None) -> Iterator[Span]:
    """An in-process memory operation span (``search_memory``, ``delete_memory`` …)."""
    with tracer.start_as_current_span(operation) as span:
        mark_arm(span)
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, operation)
        span.set_attribute(sc.GEN_AI_MEMORY_STORE_ID, store_id)
        if count is not None:
            span.set_attribute(sc.GEN_AI_MEMORY_RECORD_COUNT, count)
        yield span


def current_span() -> Span:
    """The span of the running node (a no-op span when tracing is off)."""
    return trace.get_current_span()


def content_capture(settings: Settings) -> Callable[[str], str] | None:
    """What spans record of a text: None with ``telemetry.capture_content`` off, else what would
    be stored of it (:func:`~tianma.guardrails.secrets.storable`: secrets removed, PII redacted
    as ``guardrails.pii_redaction`` says)."""
    if not settings.telemetry.capture_content:
        return None
    pii_redaction = settings.guardrails.pii_redaction
    return lambda text: storable(text, pii_redaction)[0]
