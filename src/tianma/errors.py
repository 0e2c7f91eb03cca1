"""The whole tianma exception tree.

::

    TianmaError
     ├── ConfigError (also ValueError)        bad settings or options
 │    └── ScenarioError                    a bad regression scenario file
     ├── InvalidInputError (also ValueError)  bad arguments to the public API
     ├── PluginNotFoundError                  no implementation under that name
     ├── BackendError
     │    ├── BackendUnavailableError         a service (Ollama, Qdrant server, SQL) cannot be reached
     │    │    └── ChatModelUnavailableError  the chat model failed: down, model missing, timeout
     │    └── MemoryStoreError
     │         └── RecordNotFoundError        no record or event with that id
     ├── GraphError                           the turn graph failed in an unexpected way
     ├── GuardrailBlockedError                a guardrail refused an operation
     └── HomeInUseError                       a command needs the data home, a running server holds it
"""

from __future__ import annotations


class TianmaError(Exception):
    """Base class of every error tianma raises on purpose."""


class ConfigError(TianmaError, ValueError):
    """Settings or plugin options are invalid; the message names the field."""


class InvalidInputError(TianmaError, ValueError):
    """An argument of the public API is malformed; the message says which and why."""


class PluginNotFoundError(TianmaError):
    """No plugin is registered or installed under the requested name."""

    def __init__(self, group: str, name: str, available: list[str]) -> None:
        self.group = group
        self.name = name
        self.available = available
        choices = ", ".join(available) or "none"
        super().__init__(f"no {group} plugin named {name!r} (available: {choices})")


class BackendError(TianmaError):
    """A storage or model backend failed."""


class BackendUnavailableError(BackendError):
    """A backend service could not be reached or refused the request."""


class ChatModelUnavailableError(BackendUnavailableError):
    """The chat model could not answer; the message says what to do."""

    def __init__(self, message: str, *, event_id: str | None = None) -> None:
        super().__init__(message)
        self.event_id = event_id
        """The event that recorded the user's message despite the failure."""


class MemoryStoreError(BackendError):
    """The memory store rejected an operation."""


class RecordNotFoundError(MemoryStoreError):
    """No record with the given id exists for that user."""


class GraphError(TianmaError):
    """The turn graph failed in an unexpected way."""


class GuardrailBlockedError(TianmaError):
    """A guardrail refused an operation."""


class HomeInUseError(TianmaError):
    """A command needs the data home to itself (``tianma index rebuild``, a second ``serve``)
    while a running ``tianma serve`` holds it; the message says to stop the server first."""
