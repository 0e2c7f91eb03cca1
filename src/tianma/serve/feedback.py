"""``POST /tianma/feedback``: like, dislike or a correction on a turn, by its event id."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tianma.errors import RecordNotFoundError, TurnNotFoundError
from tianma.serve.bodies import check_chars, validated
from tianma.serve.context import context_of
from tianma.serve.http import authenticate, json_body

MAX_EVENT_ID = 200


class FeedbackBody(BaseModel):
    """The request body (other fields are ignored)."""

    model_config = ConfigDict(extra="allow", strict=True)

    event_id: str = Field(min_length=1, max_length=MAX_EVENT_ID)
    kind: str = Field(min_length=1, max_length=40)
    text: str | None = None


async def give_feedback(request: Request) -> Response:
    """Body: ``{"event_id": …, "kind": "like" | "dislike" | "correction", "text": …}``.

    The event must be one of the caller's turns (an admin may judge any). Errors are answered
    as ``{"error": …}`` (:mod:`tianma.serve.error_handlers`).
    """
    rt = context_of(request).runtime
    principal = authenticate(request)
    body = validated(FeedbackBody, await json_body(request))
    check_chars(body.text, "text", rt.settings.serve.max_message_chars, "serve.max_message_chars")

    def record() -> str:
        owner = rt.store.get(body.event_id).user_id
        if owner != principal.user_id and not principal.admin:
            raise RecordNotFoundError(body.event_id)
        return rt.feedback(body.event_id, body.kind, body.text)

    try:
        signal_id = await run_in_threadpool(record)
    except RecordNotFoundError as exc:
        raise TurnNotFoundError(f"no turn with event id {body.event_id}", param="event_id") from exc
    return JSONResponse({"signal_id": signal_id, "event_id": body.event_id, "kind": body.kind})


def routes() -> list[BaseRoute]:
    return [Route("/tianma/feedback", give_feedback, methods=["POST"])]
