"""The ``tianma serve`` application: Ollama's API, OpenAI's chat API, feedback, forget and the review UI."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount

from tianma.serve import feedback, forget, ollama_api, openai_api, openwebui_feedback
from tianma.serve.admin_api import AdminApi
from tianma.serve.auth import Authenticator
from tianma.serve.context import ServeContext
from tianma.serve.dialogues import DialogueTracker
from tianma.serve.error_handlers import exception_handlers
from tianma.serve.models import InstalledModels
from tianma.serve.origin_guard import OriginGuard
from tianma.serve.turns import TurnRunner
from tianma.serve.ui import ui_routes
from tianma.serve.upstream import Upstream

if TYPE_CHECKING:
    from tianma.runtime import Runtime

logger = logging.getLogger("tianma.serve")
SCHEDULER_POLL_S = 60.0


def create_app(runtime: Runtime, *, host: str | None = None, scheduler: bool | None = None,
               scheduler_poll_s: float = SCHEDULER_POLL_S, background_learning: bool = True,
               admin_token: str | None = None) -> Starlette:  # fmt: skip
    """The ASGI application over one runtime (the caller closes the runtime).

    Args:
        runtime: memory, turn graph and settings (``serve.*``, ``ollama.base_url``).
        host: the address the server binds (decides whether keyless access is allowed);
            default ``serve.host``.
        scheduler: run the periodic jobs in a background thread; default ``serve.scheduler``.
        background_learning: triggered reflections run in the runtime's background worker (off
            only to measure what that saves: ``tianma bench serve``).
        admin_token: open the CLI's admin API (``/tianma/admin``, :mod:`tianma.serve.admin_api`)
            to this token; ``None`` = no admin API. ``tianma serve`` makes one per run and
            writes it to ``<home>/serve.json``.

    Raises:
        ConfigError: keyless on a non-loopback address; an admin token under 16 characters.
    """
    settings = runtime.settings
    serve = settings.serve
    auth = Authenticator(serve, settings.user, host or serve.host)
    admin = [] if admin_token is None else AdminApi(admin_token).routes()
    upstream = Upstream(settings.ollama.base_url, settings.ollama.timeout_s)
    dialogues = DialogueTracker()
    turns = TurnRunner(runtime, upstream, dialogues, serve.max_concurrent, serve.max_queue)
    ctx = ServeContext(runtime, auth, upstream, dialogues, turns, InstalledModels(upstream))
    run_jobs = serve.scheduler if scheduler is None else scheduler
    if background_learning:
        runtime.start_background_learning()  # a reply never waits for a reflection it triggered

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stop = threading.Event()
        worker = None
        if run_jobs:
            worker = threading.Thread(target=_run_jobs, args=(runtime, stop, scheduler_poll_s),
                                      name="tianma-scheduler", daemon=True)  # fmt: skip
            worker.start()
        try:
            yield
        finally:
            stop.set()
            await asyncio.to_thread(turns.close)  # off the loop: a model call being cancelled needs it
            if worker is not None:
                worker.join(timeout=30)
            await upstream.aclose()

    guard = Middleware(OriginGuard, bind_host=host or serve.host, allowed_origins=serve.allowed_origins,
                       allowed_hosts=serve.allowed_hosts)  # fmt: skip
    app = Starlette(
        middleware=[guard],
        routes=[
            *admin,
            *feedback.routes(),
            *forget.routes(),
            *openwebui_feedback.routes(),
            *openai_api.routes(),
            Mount("/ui", routes=ui_routes(settings.zone)),
            *ollama_api.routes(),
        ],
        lifespan=lifespan,
        exception_handlers=dict(exception_handlers()),  # every error as JSON in its API's shape
    )
    app.state.tianma = ctx
    return app


def _run_jobs(runtime: Runtime, stop: threading.Event, poll_s: float) -> None:
    from tianma.scheduler import Scheduler

    logger.info("scheduler started (poll every %.0f s)", poll_s)
    Scheduler(runtime).run_forever(stop, poll_s)
