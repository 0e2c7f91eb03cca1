"""Calling the chat model: one ``chat {model}`` span, errors mapped to one clear line."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from opentelemetry.trace import SpanKind, Status, StatusCode

from tianma.errors import ChatModelUnavailableError
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import mark_arm, tracer


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    input_tokens: int
    output_tokens: int
    model: str
    finish_reason: str


def model_name_of(model: BaseChatModel) -> str:
    """The model's name as its provider knows it."""
    return str(getattr(model, "model", None) or getattr(model, "model_name", None) or type(model).__name__)


@contextmanager
def map_chat_errors(model: str, base_url: str | None, timeout_s: float | None) -> Iterator[None]:
    """Turn provider failures into :class:`ChatModelUnavailableError` with what to do."""
    try:
        yield
    except ChatModelUnavailableError:
        raise
    except httpx.ConnectTimeout as exc:  # nothing answered the TCP handshake: not a slow model
        raise ChatModelUnavailableError(_unreachable(base_url)) from exc
    except httpx.TimeoutException as exc:
        raise ChatModelUnavailableError(
            f"the chat model {model} did not answer within {timeout_s:g} s; "
            "try a smaller model or raise TIANMA_OLLAMA__TIMEOUT_S"
        ) from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise ChatModelUnavailableError(_unreachable(base_url)) from exc
    except Exception as exc:  # provider-specific errors (ollama.ResponseError, …)
        status = getattr(exc, "status_code", None)
        detail = str(getattr(exc, "error", None) or exc)
        if status == 404 or "not found" in detail.lower():
            raise ChatModelUnavailableError(
                f"the model {model} is not available in Ollama at {base_url}; "
                f"run `ollama pull {model}` or set TIANMA_OLLAMA__MODEL"
            ) from exc
        raise ChatModelUnavailableError(f"the chat model {model} failed: {detail}") from exc


def call_chat(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    base_url: str | None = None,
    timeout_s: float | None = None,
    capture: Callable[[str], str] | None = None,
) -> ChatResult:
    """Invoke the chat model once, traced with the GenAI conventions.

    ``capture`` turns each prompt message and the reply into the text the span records (see
    :func:`tianma.telemetry.spans.content_capture`: PII redacted as stored); None records none.

    Raises:
        ChatModelUnavailableError: the model is down, missing, timed out or failed.
    """
    name = model_name_of(model)
    with tracer.start_as_current_span(f"chat {name}", kind=SpanKind.CLIENT) as span:
        mark_arm(span)
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, "chat")
        span.set_attribute(sc.GEN_AI_PROVIDER_NAME, _provider(model))
        span.set_attribute(sc.GEN_AI_REQUEST_MODEL, name)
        if capture is not None:
            span.set_attribute(sc.GEN_AI_INPUT_MESSAGES, [capture(str(m.content)) for m in messages])
        try:
            with map_chat_errors(name, base_url, timeout_s):
                answer = model.invoke(list(messages))
        except ChatModelUnavailableError as exc:
            span.set_attribute(sc.ERROR_TYPE, type(exc.__cause__ or exc).__name__)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            raise
        usage = getattr(answer, "usage_metadata", None) or {}
        meta = getattr(answer, "response_metadata", None) or {}
        result = ChatResult(
            text=answer.text if isinstance(answer.text, str) else str(answer.content),
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            model=str(meta.get("model_name") or meta.get("model") or name),
            finish_reason=str(meta.get("done_reason") or meta.get("finish_reason") or "stop"),
        )
        span.set_attribute(sc.GEN_AI_RESPONSE_MODEL, result.model)
        span.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, result.input_tokens)
        span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, result.output_tokens)
        span.set_attribute(sc.GEN_AI_RESPONSE_FINISH_REASONS, [result.finish_reason])
        if capture is not None:
            span.set_attribute(sc.GEN_AI_OUTPUT_MESSAGES, [capture(result.text)])
        return result


def _unreachable(base_url: str | None) -> str:
    return f"Ollama is not reachable at {base_url}; start it (`ollama serve`) or set TIANMA_OLLAMA__BASE_URL"


def _provider(model: BaseChatModel) -> str:
    return sc.PROVIDER_OLLAMA if type(model).__name__ == "ChatOllama" else type(model).__name__
