"""What every request handler of ``tianma serve`` shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection

from tianma.serve.auth import Authenticator
from tianma.serve.dialogues import DialogueTracker
from tianma.serve.models import InstalledModels
from tianma.serve.upstream import Upstream

if TYPE_CHECKING:
    from tianma.runtime import Runtime
    from tianma.serve.turns import TurnRunner


@dataclass(frozen=True)
class ServeContext:
    """The runtime, who may ask, the Ollama behind (and its models), and the turn runner."""

    runtime: Runtime
    auth: Authenticator
    upstream: Upstream
    dialogues: DialogueTracker
    turns: TurnRunner
    models: InstalledModels


def context_of(conn: HTTPConnection) -> ServeContext:
    """The context ``create_app`` put in the application's state."""
    ctx: ServeContext = conn.app.state.tianma
    return ctx
