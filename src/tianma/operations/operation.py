"""An operation: one step of a CLI command, run against a data home here or inside ``tianma serve``.

A CLI command is its rendering plus one or more operations. An operation is a typed function
``(home, *args) -> result``; :class:`Operation` wraps it with a name and the codec that carries
its arguments and result as JSON (pydantic type adapters built from its annotations), so the
same function runs in the CLI's process over a home it opened itself, or in the server's
process over the server's runtime (``POST /tianma/admin/ops/<name>``), and the CLI renders
the same data either way. Errors travel as their class in :mod:`tianma.errors` and message.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError

from tianma import errors
from tianma.errors import InvalidInputError, TianmaError

if TYPE_CHECKING:
    from tianma.runtime import Runtime
    from tianma.settings import Settings
    from tianma.storage.protocols import MemoryStore

P = ParamSpec("P")
R = TypeVar("R")


class Home(Protocol):
    """A data home as an operation sees it: SQL alone, or the whole runtime when it needs more."""

    @property
    def settings(self) -> Settings:
        """The settings of whoever opened the home (the server's, inside ``serve``)."""
        ...

    @property
    def store(self) -> MemoryStore:
        """The SQL store; using only this never opens the vector index, embedder or model."""
        ...

    def runtime(self) -> Runtime:
        """The whole runtime (index, embedder, chat model), opened on first use."""
        ...


@dataclass(frozen=True)
class Operation(Generic[P, R]):
    """A named function over a :class:`Home` with a JSON codec for its arguments and result."""

    name: str
    """How the admin API names it (``memory.list``)."""
    fn: Callable[Concatenate[Home, P], R] = field(repr=False)

    def __call__(self, home: Home, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(home, *args, **kwargs)

    @functools.cached_property
    def _params(self) -> dict[str, inspect.Parameter]:
        return dict(list(inspect.signature(self.fn).parameters.items())[1:])

    @functools.cached_property
    def _adapters(self) -> dict[str, TypeAdapter[Any]]:
        hints = typing.get_type_hints(self.fn)
        return {
            name: TypeAdapter(hint)
            for name, hint in hints.items()
            if name in self._params or name == "return"
        }

    def encode_args(self, *args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        """The call's arguments by name, as JSON values."""
        bound = inspect.signature(self.fn).bind(None, *args, **kwargs)
        bound.apply_defaults()
        values = list(bound.arguments.items())[1:]
        return {name: self._adapters[name].dump_python(value, mode="json") for name, value in values}

    def decode_args(self, payload: object) -> dict[str, Any]:
        """Keyword arguments from :meth:`encode_args`'s output, validated against the signature.

        Raises:
            InvalidInputError: not an object, an unknown or missing argument, a bad value.
        """
        if not isinstance(payload, dict):
            raise InvalidInputError(f"{self.name}: arguments must be a JSON object")
        unknown = sorted(set(payload) - set(self._params))
        if unknown:
            raise InvalidInputError(f"{self.name}: unknown argument(s) {', '.join(unknown)}")
        out: dict[str, Any] = {}
        for name, param in self._params.items():
            if name not in payload:
                if param.default is inspect.Parameter.empty:
                    raise InvalidInputError(f"{self.name}: missing argument {name}")
                continue
            try:
                out[name] = self._adapters[name].validate_python(payload[name])
            except ValidationError as exc:
                raise InvalidInputError(f"{self.name}: bad argument {name}: {exc}") from exc
        return out

    def encode_result(self, result: R) -> Any:
        """The result as a JSON value."""
        return self._adapters["return"].dump_python(result, mode="json")

    def decode_result(self, payload: Any) -> R:
        """The result from :meth:`encode_result`'s output."""
        value: R = self._adapters["return"].validate_python(payload)
        return value


def operation(name: str) -> Callable[[Callable[Concatenate[Home, P], R]], Operation[P, R]]:
    """Decorator: make ``fn(home, ...)`` the operation called ``name``. Its parameters and return
    value must be annotated with types pydantic can carry (dataclasses, literals, containers)."""

    def wrap(fn: Callable[Concatenate[Home, P], R]) -> Operation[P, R]:
        return Operation(name, fn)

    return wrap


def encode_error(exc: TianmaError) -> dict[str, Any]:
    """An error as JSON: the nearest class of :mod:`tianma.errors` it is, and its message."""
    kind = next(c.__name__ for c in type(exc).__mro__ if vars(errors).get(c.__name__) is c)
    body: dict[str, Any] = {"type": kind, "message": str(exc)}
    event_id = getattr(exc, "event_id", None)
    if isinstance(event_id, str):
        body["event_id"] = event_id
    return body


def decode_error(body: object) -> TianmaError:
    """The error :func:`encode_error` described (a plain :class:`TianmaError` when its class
    takes more than a message)."""
    if not isinstance(body, dict):
        return TianmaError(f"the server answered with an error: {body!r}")
    message = str(body.get("message", ""))
    cls = vars(errors).get(str(body.get("type")))
    if not (isinstance(cls, type) and issubclass(cls, TianmaError)):
        return TianmaError(message)
    try:
        exc = cls(message)
    except TypeError:
        return TianmaError(message)
    if isinstance(body.get("event_id"), str):
        exc.event_id = body["event_id"]  # type: ignore[attr-defined]
    return exc
