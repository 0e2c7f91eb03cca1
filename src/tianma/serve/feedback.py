"""``POST /tianma/feedback``: like, dislike or a correction on a turn, by its event id."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tianma.errors import InvalidInputError, RecordNotFoundError
from tianma.serve.auth import Unauthorized
from tianma.serve.context import context_of
from tianma.serve.http import BadRequest, authenticate, json_body


async def give_feedback(request: Request) -> Response:
    """Body: ``{"event_id": …, "kind": "like" | "dislike" | "correction", "text": …}``.

    The event must be one of the caller's turns (an admin may judge any).
    """
    rt = context_of(request).runtime
    try:
        principal = authenticate(request)
        body = await json_body(request)
    except Unauthorized as exc:
        return JSONResponse({"error": f"unauthorized: {exc}"}, status_code=401)
    except BadRequest as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    event_id, kind, text = body.get("event_id"), body.get("kind"), body.get("text")
    if not isinstance(event_id, str) or not isinstance(kind, str) or not isinstance(text, str | None):
        return JSONResponse({"error": "event_id and kind are required strings; text is optional"},
                            status_code=400)  # fmt: skip

    def record() -> str:
        owner = rt.memory.store.get(event_id).user_id
        if owner != principal.user_id and not principal.admin:
            raise RecordNotFoundError(event_id)
        return rt.feedback(event_id, kind, text)

    try:
        signal_id = await run_in_threadpool(record)
    except RecordNotFoundError:
        return JSONResponse({"error": f"no turn with event id {event_id}"}, status_code=404)
    except InvalidInputError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    return JSONResponse({"signal_id": signal_id, "event_id": event_id, "kind": kind})


def routes() -> list[BaseRoute]:
    return [Route("/tianma/feedback", give_feedback, methods=["POST"])]
