"""The whole tianma exception tree.

::

    TianmaError
     ├── ConfigError (also ValueError)        bad settings or options
     │    └── ScenarioError                   a bad regression scenario file
     ├── InvalidInputError (also ValueError)  bad arguments to the public API
     ├── PluginNotFoundError                  no implementation under that name
     ├── BackendError
     │    ├── BackendUnavailableError         a service (Ollama, Qdrant server, SQL) cannot be reached
     │    │    └── ChatModelUnavailableError  the chat model failed: down, model missing, timeout
     │    └── MemoryStoreError
     │         └── RecordNotFoundError        no record or event with that id
     ├── GraphError                           the turn graph failed in an unexpected way
     ├── GuardrailBlockedError                a guardrail refused an operation
     ├── HomeInUseError                       a command needs the data home, a running server holds it
     └── RequestError                         ``tianma serve`` refused a client's request (``status``)
          ├── BadRequestError (also ValueError)  400: the body is not what the endpoint takes
          │    └── RequestTooLargeError       413: the body is over ``serve.max_body_bytes``
          ├── UnauthorizedError               401: no API key, or an unknown one
          │    └── BadUserTokenError          401: a signed Open WebUI user header that does not verify
          ├── ForbiddenError                  403: not allowed from there (origin, host, form token)
          ├── TurnNotFoundError               404: no turn matches what the request names
          ├── ModelNotFoundError              404: Ollama has no model by the name a chat asks for
          ├── ServerBusyError                 503: every turn slot is taken and the wait line is full
          └── ClientGoneError                 499: the client went away before its answer began

``tianma.serve`` maps every one of them (and any other exception) to JSON in the shape of the
API the request came through (:mod:`tianma.serve.error_handlers`).
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


class RequestError(TianmaError):
    """``tianma serve`` refused a client's request; ``status`` is the HTTP status it answers with."""

    status = 400

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        """The request field at fault (``messages[0].content``), when one is."""
        self.code = code
        """A machine-readable reason (OpenAI's ``code``), when there is one."""


class BadRequestError(RequestError, ValueError):
    """The request body is not what the endpoint takes; the message names the field and why."""


class RequestTooLargeError(BadRequestError):
    """The request body is larger than ``serve.max_body_bytes``."""

    status = 413


class UnauthorizedError(RequestError):
    """No API key, or an unknown one, while keys are required."""

    status = 401


class BadUserTokenError(UnauthorizedError):
    """A signed Open WebUI user header that does not verify (wrong secret, expired, malformed)."""


class ForbiddenError(RequestError):
    """The request may not be made from where it comes (another site's page, another machine)."""

    status = 403


class TurnNotFoundError(RequestError):
    """No turn matches what the request names (an Open WebUI rating of a reply tianma never gave)."""

    status = 404


class ModelNotFoundError(RequestError):
    """Ollama has no model by the name a chat request asks for (refused before its turn)."""

    status = 404

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message, param="model", code="model_not_found")
        self.hint = hint
        """What to do about it (``ollama pull …``), sent as Ollama's ``hint``."""


class ServerBusyError(RequestError):
    """Every turn slot is taken and the wait line is full (Ollama's own 503)."""

    status = 503


class ClientGoneError(RequestError):
    """The client went away before its answer began (its turn was stopped); nobody reads the answer."""

    status = 499
