"""A request's JSON body, checked at the boundary before anything is recorded or asked.

In order: at most ``serve.max_body_bytes`` (the ``Content-Length`` a client announces, then the
bytes as they arrive: a larger body is never read whole), UTF-8, JSON (no ``NaN``), an object,
nested at most :data:`MAX_DEPTH` deep, and every string — keys too — encodable (JSON's ``\\ud800``
escape makes a lone surrogate, which SQLite, the indexes and Ollama cannot take). Then the
endpoint's schema (:func:`validated`), whose error names the field the way OpenAI does
(``messages[0].content``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from starlette.requests import Request

from tianma.errors import BadRequestError, RequestTooLargeError

MAX_DEPTH = 128
"""Deepest nesting of objects and arrays a body may have (a JSON schema in ``format`` or a
tool's ``parameters`` takes two levels per nested property)."""

Schema = TypeVar("Schema", bound=BaseModel)


async def read_body(request: Request, limit: int) -> bytes:
    """The body's bytes, at most ``limit`` of them.

    Raises:
        RequestTooLargeError: the client announces, or sends, more.
    """
    announced = request.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > limit:
        raise _too_large(int(announced), limit)
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise _too_large(None, limit)
    return bytes(raw)


def _too_large(size: int | None, limit: int) -> RequestTooLargeError:
    said = f"is {size} bytes" if size is not None else f"is over {limit} bytes"
    return RequestTooLargeError(f"the request body {said}; at most {limit} bytes are taken (serve.max_body_bytes)",
                                code="request_too_large")  # fmt: skip


def parse_object(raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw``.

    Raises:
        BadRequestError: empty, not UTF-8, not JSON, not an object, nested too deep, or a string
            that is not valid Unicode (a lone surrogate).
    """
    if not raw.strip():
        raise BadRequestError("missing request body")
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise BadRequestError(f"the request body is not UTF-8 (byte {exc.start})") from None
    try:
        body = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequestError(f"invalid JSON: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise BadRequestError(f"invalid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequestError("the request body must be a JSON object")
    check_strings(body, escaped="\\u" in text)
    return body


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_strings(body: dict[str, Any], escaped: bool = True) -> None:
    """Nesting and Unicode of a parsed body (``escaped=False``: the text had no ``\\u`` escape,
    so it cannot hold a surrogate and only the depth is checked).

    Raises:
        BadRequestError: nested deeper than :data:`MAX_DEPTH`, or a string that cannot be UTF-8.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(body, ())]
    while stack:
        value, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            raise BadRequestError(f"invalid JSON: nested more than {MAX_DEPTH} levels deep", param=param(path[:8]))
        if isinstance(value, dict):
            for key, item in value.items():
                if escaped:
                    _encodable(key, (*path, key))
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, i)) for i, item in enumerate(value))
        elif escaped and isinstance(value, str):
            _encodable(value, path)


def _encodable(text: str, path: tuple[str | int, ...]) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        name = printable(param(path))
        lone = f"\\u{ord(text[exc.start]):04x}"
        raise BadRequestError(f"invalid {name or 'body'}: a lone surrogate ({lone}) is not text",
                              param=name or None, code="invalid_unicode") from None  # fmt: skip


def printable(text: str) -> str:
    """``text`` with any lone surrogate written out as ``\\udXXX`` (an error message can show it)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def param(path: Sequence[str | int]) -> str:
    """A field's path as OpenAI writes it: ``messages[0].content``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_chars(text: str | None, name: str, limit: int, setting: str) -> None:
    """``text`` (the field ``name``) within ``limit`` characters.

    Raises:
        BadRequestError: it is longer; the message names ``setting``.
    """
    if text is not None and len(text) > limit:
        raise BadRequestError(f"invalid {name}: {len(text)} characters; at most {limit} are taken ({setting})",
                              param=name, code="string_above_max_length")  # fmt: skip


def validated(schema: type[Schema], body: dict[str, Any]) -> Schema:
    """``body`` as ``schema``.

    Raises:
        BadRequestError: a field missing or of the wrong type; the message and ``param`` name it.
    """
    try:
        return schema.model_validate(body)
    except ValidationError as exc:
        raise _bad_request(exc.errors(include_url=False), body) from None


_EXPECTED = {"string_type": "a string", "int_type": "an integer", "float_type": "a number",
             "bool_type": "true or false", "list_type": "an array", "dict_type": "an object",
             "model_type": "an object", "model_attributes_type": "an object", "none_required": "null"}  # fmt: skip


def _bad_request(errors: list[ErrorDetails], body: dict[str, Any]) -> BadRequestError:
    """The clearest of pydantic's errors: the deepest field (a union reports each of its
    branches; their expectations are joined)."""
    located = [(_data_path(e, body), e) for e in errors]
    deepest = max(len(path) for path, _ in located)
    path, first = next((p, e) for p, e in located if len(p) == deepest)
    name = param(path)
    if first["type"] == "missing":
        return BadRequestError(f"{name} is required", param=name)
    same = [e for p, e in located if p == path]
    expected = list(dict.fromkeys(_expected(e) for e in same if _expected(e)))
    if expected:
        value = first["input"]
        literal = isinstance(value, str) and any(e["type"] == "literal_error" for e in same)
        got = repr(value[:40]) if literal else _json_type(value)
        reason = f"expected {' or '.join(expected)}, got {got}"
    elif first["type"] == "too_short":
        reason = "must not be empty"
    else:
        reason = "; ".join(dict.fromkeys(str(e["msg"]).removeprefix("Value error, ") for e in same))
    return BadRequestError(f"invalid {name}: {reason}" if name else reason, param=name or None)


def _expected(error: ErrorDetails) -> str:
    if error["type"] == "literal_error":
        return str((error.get("ctx") or {}).get("expected", ""))
    return _EXPECTED.get(error["type"], "")


def _data_path(error: ErrorDetails, body: Any) -> tuple[str | int, ...]:
    """An error's location in the body, without the union branch names pydantic puts in it."""
    path: list[str | int] = []
    here = body
    loc = error["loc"]
    for i, part in enumerate(loc):
        field = isinstance(here, dict) and isinstance(part, str) and part in here
        item = isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here)
        if field or item:
            here = here[part]
        elif error["type"] != "missing" or i < len(loc) - 1:
            continue  # a branch of a union ("str", "list[Part]"), not a field
        path.append(part)
    return tuple(path)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
