"""Schema-constrained JSON from small local models: extract, repair only what is safe, or drop."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, Unpack

import json_repair
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from tianma.errors import ChatModelUnavailableError
from tianma.llm.chat import call_chat

M = TypeVar("M", bound=BaseModel)

RETRY_MESSAGE = (
    "Your previous answer was invalid ({reason}). Answer again with only the JSON object "
    "that matches the schema: no prose, no markdown fences, no comments."
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_BARE = re.compile(r"[A-Za-z0-9_.+\-$]+")  # an unquoted key, number, true/None/NaN, ...
_COLON = re.compile(r"\s*:")
_ESCAPES = frozenset('"\\/bfnrtu')
_MAX_DEPTH = 32  # deeper is a degenerate answer, and would hit Python's recursion limit when parsed


class ChatCallOptions(TypedDict, total=False):
    """Keyword arguments passed through to :func:`tianma.llm.chat.call_chat`."""

    base_url: str | None
    timeout_s: float | None
    capture: Callable[[str], str] | None


@dataclass(frozen=True, slots=True)
class StructuredResult(Generic[M]):
    """The outcome of :func:`call_structured`: a complete instance, or nothing and why."""

    value: M | None
    """The validated instance, or None when every attempt was dropped or the model failed."""
    attempts: int
    """How many times the model was called."""
    raw: tuple[str, ...]
    """The raw text of each answer received, in order."""
    error: str | None
    """Why the last attempt was dropped, or None on success."""
    input_tokens: int = 0
    """Input tokens summed over all attempts."""
    output_tokens: int = 0
    """Output tokens summed over all attempts."""


class _Rejected(ValueError):
    """Internal: the text cannot become a complete, valid instance; the message says why."""


def _scan(text: str, start: int) -> tuple[int, Counter[str], bool]:
    """Scan from the ``{`` at ``start`` to its matching ``}``, skipping strings and comments.

    Returns the end (one past the ``}``; -1 if cut off, mismatched or too deep), counts of
    what a parse must yield (``{``, ``[``, ``:``, ``str`` for quoted literals and bare keys,
    ``atom`` for other bare words), and whether anything is unsafe to repair: non-ASCII outside
    strings, or an escape JSON does not know in a double-quoted string (``\\'``, ``D:\\data``).
    """
    counts, stack, unsafe, i, n = Counter[str](), list[str](), False, start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    unsafe |= c == '"' and text[j + 1 : j + 2] not in _ESCAPES
                    j += 1
                j += 1
            if j >= n:
                break
            counts["str"], i = counts["str"] + 1, j + 1
        elif text.startswith(("//", "/*"), i):
            block = text[i + 1] == "*"
            j = text.find("*/" if block else "\n", i + 2)
            if j < 0 and block:
                break
            i = n if j < 0 else j + 1 + block
        elif m := _BARE.match(text, i):
            counts["str" if _COLON.match(text, m.end()) else "atom"] += 1
            i = m.end()
        else:
            if c in "{[":
                if len(stack) == _MAX_DEPTH:
                    break
                stack.append("}" if c == "{" else "]")
                counts[c] += 1
            elif c in "}]":
                if not stack or stack.pop() != c:
                    break
                if not stack:
                    return i + 1, counts, unsafe
            elif c == ":":
                counts[c] += 1
            elif not c.isspace() and not c.isascii():
                unsafe = True
            i += 1
    return -1, counts, unsafe


def _locate(text: str) -> str:
    """The one outermost object in a model's answer; :class:`_Rejected` says why there is none."""
    text = _THINK.sub("", text.replace("\ufeff", "")).rpartition("</think>")[2]
    if "<think>" in text:  # the model ran out of tokens while reasoning
        raise _Rejected("reasoning never finished")
    start = text.find("{")
    if start < 0:
        raise _Rejected("no JSON object in the answer")
    if text[:start].rstrip().endswith("["):
        raise _Rejected("the top-level value is not an object")
    end = _scan(text, start)[0]
    if end < 0:
        raise _Rejected("truncated, unbalanced or too deeply nested JSON")
    rest = text[end:].replace("```", "").strip()
    if rest.startswith((",", "]", "}")) or "{" in rest:
        raise _Rejected("more than one JSON value in the answer")
    return text[start:end]


def extract_json_text(text: str) -> str | None:
    """Strip a BOM, ``<think>`` reasoning, markdown fences and prose around a JSON object.

    Args:
        text: The model's raw answer.

    Returns:
        The text from the first ``{`` to its matching ``}``; None if there is none, if it is cut
        off (unbalanced brackets or quotes), inside a top-level list, or followed by a second
        object (which one was meant would be a guess).
    """
    try:
        return _locate(text)
    except _Rejected:
        return None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({k for k, _ in pairs}) != len(pairs):
        raise _Rejected("duplicate keys")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not JSON")


def _tally(value: Any, counts: Counter[str], strings: list[str]) -> None:
    """Count over a parsed value what :func:`_scan` counts over its text."""
    if isinstance(value, dict):
        counts.update({"{": 1, ":": len(value), "str": len(value)})
        strings.extend(value)
        for item in value.values():
            _tally(item, counts, strings)
    elif isinstance(value, list):
        counts["["] += 1
        for item in value:
            _tally(item, counts, strings)
    elif isinstance(value, str):
        counts["str"] += 1
        strings.append(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise _Rejected("NaN or Infinity")
    else:
        counts["atom"] += 1


def _repair(candidate: str) -> str:
    """Repair punctuation with json-repair, refusing any repair that changed the tokens.

    json-repair is permissive by design; it can split a string into new keys or drop an item
    (mangiucugna/json_repair#200, #204), so its result is checked against the text.
    """
    _, expected, unsafe = _scan(candidate, 0)
    if unsafe:
        raise _Rejected("non-ASCII outside strings or an invalid escape: the intent is a guess")
    try:
        repaired = json_repair.loads(candidate, skip_json_loads=True)
    except Exception as exc:  # json-repair has no error type of its own; any failure is a drop
        raise _Rejected(f"repair failed: {exc}") from exc
    found, strings = Counter[str](), list[str]()
    _tally(repaired, found, strings)
    if not isinstance(repaired, dict) or +found != +expected:
        raise _Rejected("repair would add, drop or merge values")
    if any(s not in candidate and json.dumps(s, ensure_ascii=False)[1:-1] not in candidate for s in strings):
        raise _Rejected("repair would change a string")
    return json.dumps(repaired, ensure_ascii=False)


def _parse(text: str, schema: type[M]) -> M:
    candidate = _locate(text)
    try:  # strict=False admits raw newlines and tabs inside strings: unambiguous, not a repair
        loaded = json.loads(
            candidate, strict=False, object_pairs_hook=_no_duplicates, parse_constant=_no_constant
        )
        document = json.dumps(loaded, ensure_ascii=False)
    except json.JSONDecodeError:
        document = _repair(candidate)
    try:
        return schema.model_validate_json(document, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the object"
        raise _Rejected(f"schema: {where}: {first['msg']}") from exc


def parse_structured(text: str, schema: type[M]) -> M | None:
    """Parse a model's answer into ``schema``, or None if it is not a complete, valid instance.

    Valid JSON is validated as is. Invalid JSON is repaired with json-repair only when the repair
    changes punctuation alone (trailing commas, quote style, comments, bare keys, Python
    literals, a missing comma): the counts of objects, arrays, keys, strings and bare values
    must match the text, and every string must appear in it. Truncated answers, duplicate keys,
    NaN, invalid escapes and non-ASCII outside strings (smart quotes, full-width commas) are
    never repaired.
    Validation is pydantic's strict JSON mode: no ``"1"`` → ``1`` or ``1`` → ``"1"``. Extra
    keys are rejected when ``schema`` sets ``extra="forbid"``, as it should.

    Args:
        text: The model's raw answer.
        schema: The pydantic model to validate against.

    Returns:
        The validated instance, or None.
    """
    try:
        return _parse(text, schema)
    except _Rejected:
        return None


def _with_json_schema(model: BaseChatModel, schema: type[BaseModel]) -> BaseChatModel:
    # call_chat passes no per-call options, so the schema goes on a copy (sharing the HTTP
    # client) of a model with ChatOllama's ``format`` field, unless the caller set one.
    if "format" not in type(model).model_fields or getattr(model, "format", None):
        return model
    return model.model_copy(update={"format": schema.model_json_schema()})


def call_structured(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    schema: type[M],
    *,
    retries: int = 1,
    **call_kwargs: Unpack[ChatCallOptions],
) -> StructuredResult[M]:
    """Ask the model for a ``schema`` instance; retry on an invalid answer, then give up cleanly.

    A model with a ``format`` field (ChatOllama) gets the JSON schema there, for Ollama's
    constrained decoding, unless the caller set one. Temperature is the caller's, set on the
    model; reflection uses 0.2 or lower. A retry sends ``messages``, the invalid answer and a
    user message asking for the JSON object only.

    Args:
        model: The chat model.
        messages: The prompt.
        schema: The pydantic model the answer must validate against.
        retries: How many more calls to make after an invalid answer.
        **call_kwargs: Passed to :func:`tianma.llm.chat.call_chat`.

    Returns:
        The result. ``value`` is None and ``error`` says why when every answer was dropped or
        the model failed; :class:`~tianma.errors.ChatModelUnavailableError` is not raised and
        ends the attempts.
    """
    bound = _with_json_schema(model, schema)
    prompt, raw, error = list(messages), list[str](), None
    tokens_in = tokens_out = attempts = 0
    while attempts <= max(retries, 0):
        attempts += 1
        try:
            answer = call_chat(bound, prompt, **call_kwargs)
        except ChatModelUnavailableError as exc:
            error = str(exc)
            break
        raw.append(answer.text)
        tokens_in, tokens_out = tokens_in + answer.input_tokens, tokens_out + answer.output_tokens
        try:
            value = _parse(answer.text, schema)
        except _Rejected as exc:
            error = str(exc)
            prompt = [*messages, AIMessage(answer.text), HumanMessage(RETRY_MESSAGE.format(reason=error))]
            continue
        return StructuredResult(value, attempts, tuple(raw), None, tokens_in, tokens_out)
    return StructuredResult(None, attempts, tuple(raw), error, tokens_in, tokens_out)


STRUCTURED_TEMPERATURE = 0.2
"""Temperature of structured calls (reflection, summaries): stable output, no improvising."""


def at_low_temperature(model: BaseChatModel) -> BaseChatModel:
    """A copy of the model at :data:`STRUCTURED_TEMPERATURE` (a model without one as given)."""
    if "temperature" not in type(model).model_fields:
        return model
    return model.model_copy(update={"temperature": STRUCTURED_TEMPERATURE})
