"""What the chat endpoints take, as pydantic models checked before a turn starts.

Only the fields tianma reads or sends on are typed — strictly, as Ollama (Go) and OpenAI take
them: a number is not a string, ``true`` is not ``1``. Every model allows extra fields: clients
send their own (Open WebUI's ``metadata``, OpenAI's ``logprobs``, Ollama's ``truncate``), and the
request goes to Ollama with them. The handlers keep using the body as sent; these models only
vouch for its shape.
"""

from __future__ import annotations

import binascii
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tianma.errors import BadRequestError
from tianma.serve.bodies import check_chars
from tianma.serve.turns import ChatRequest
from tianma.settings import ServeSettings

MAX_MODEL_NAME = 256


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class ToolFunction(_Body):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(_Body):
    """A tool the model may call (the same shape in both APIs)."""

    type: str = "function"
    function: ToolFunction


class OllamaCalled(_Body):
    name: str
    arguments: dict[str, Any] | None = None


class OllamaToolCall(_Body):
    function: OllamaCalled


class OllamaMessage(_Body):
    role: str
    content: str | None = None
    images: list[str] | None = None
    thinking: str | None = None
    tool_calls: list[OllamaToolCall] | None = None
    tool_name: str | None = None


class OllamaChat(_Body):
    """``POST /api/chat`` (no messages: Ollama loads the model)."""

    model: str
    messages: list[OllamaMessage] | None = None
    stream: bool | None = None
    format: Literal["", "json"] | dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    keep_alive: str | int | float | None = None
    think: bool | Literal["high", "medium", "low"] | None = None


class ImageUrl(_Body):
    url: str
    detail: str | None = None


class ContentPart(_Body):
    """One part of an OpenAI message's content: text, an image, or a kind tianma passes over."""

    type: str
    text: str | None = None
    image_url: ImageUrl | str | None = None
    """OpenAI's ``{"url": ...}``; a bare URL string as some clients send (Ollama takes both)."""

    @model_validator(mode="after")
    def _has_its_payload(self) -> ContentPart:
        if self.type == "text" and self.text is None:
            raise ValueError("a text part needs its text")
        if self.type == "image_url" and self.image_url is None:
            raise ValueError("an image_url part needs its image_url")
        return self


class OpenAICalled(_Body):
    name: str
    arguments: str | dict[str, Any] | None = None


class OpenAIToolCall(_Body):
    id: str | None = None
    type: str | None = None
    function: OpenAICalled


class OpenAIMessage(_Body):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[OpenAIToolCall] | None = None
    tool_call_id: str | None = None


class JsonSchema(_Body):
    name: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class ResponseFormat(_Body):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchema | None = None


class StreamOptions(_Body):
    include_usage: bool | None = None


class OpenAIChat(_Body):
    """``POST /v1/chat/completions``."""

    model: str
    messages: list[OpenAIMessage] = Field(min_length=1)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    temperature: float | None = None
    top_p: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    response_format: ResponseFormat | None = None
    tools: list[Tool] | None = None
    tool_choice: str | dict[str, Any] | None = None


def check_model(model: str) -> None:
    """A model name Ollama could have: not empty, short, no spaces or control characters.

    Raises:
        BadRequestError: otherwise.
    """
    if not model:
        raise BadRequestError("model is required", param="model")
    if len(model) > MAX_MODEL_NAME or any(c.isspace() or unicodedata.category(c)[0] == "C" for c in model):
        raise BadRequestError(f"invalid model: {_shown(model)!r} is not a model name", param="model")


def check_images(chat: OllamaChat | OpenAIChat) -> None:
    """Every image is base64 data, as Ollama decodes it: Ollama's ``images`` strings, OpenAI's
    ``image_url`` as a ``data:…;base64,`` URL (tianma fetches no image from the web).

    Raises:
        BadRequestError: an image that is not; ``param`` names it.
    """
    for i, message in enumerate(chat.messages or []):
        if isinstance(message, OllamaMessage):
            for j, image in enumerate(message.images or []):
                _check_base64(image, f"messages[{i}].images[{j}]")
        elif isinstance(message, OpenAIMessage) and isinstance(message.content, list):
            for j, part in enumerate(message.content):
                if part.type == "image_url" and part.image_url is not None:
                    bare = isinstance(part.image_url, str)
                    url = part.image_url if isinstance(part.image_url, str) else part.image_url.url
                    _check_data_url(url, f"messages[{i}].content[{j}].image_url" + ("" if bare else ".url"))


def data_url_payload(url: str) -> str | None:
    """What follows the comma of a ``data:…;base64,`` URL; None for any other URL."""
    head, comma, data = url.partition(",")
    return data if head.startswith("data:") and head.endswith(";base64") and comma else None


def _check_data_url(url: str, name: str) -> None:
    data = data_url_payload(url)
    if data is None:
        raise BadRequestError(f"invalid {name}: {_shown(url)!r} is not a data: URL with base64 data (an image "
                              "is sent inline; tianma fetches no image from the web)", param=name)  # fmt: skip
    _check_base64(data, name)


def _shown(text: str) -> str:
    """The start of a long value, for an error message."""
    return text[:40] + ("…" if len(text) > 40 else "")


def _check_base64(data: str, name: str) -> None:
    try:
        if not binascii.a2b_base64(data.replace("\r", "").replace("\n", ""), strict_mode=True):
            raise ValueError("no image")
    except (binascii.Error, ValueError):
        raise BadRequestError(f"invalid {name}: an image must be base64 data", param=name) from None


def check_turn_size(request: ChatRequest, serve: ServeSettings) -> None:
    """A turn's message within ``serve.max_message_chars``, all its text within ``serve.max_prompt_chars``.

    Raises:
        BadRequestError: either is longer.
    """
    check_chars(request.text, f"messages[{len(request.messages) - 1}].content", serve.max_message_chars,
                "serve.max_message_chars")  # fmt: skip
    total = sum(len(_text(m.get("content"))) for m in request.messages)
    if total > serve.max_prompt_chars:
        raise BadRequestError(f"invalid messages: they carry {total} characters of text; a turn takes at most "
                              f"{serve.max_prompt_chars} (serve.max_prompt_chars)", param="messages",
                              code="string_above_max_length")  # fmt: skip


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""
