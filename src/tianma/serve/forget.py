"""``POST /tianma/forget``: delete everything tianma holds about the caller ("forget me").

Body: ``{"confirm": true, "user": "<id>"?}``. ``confirm`` must be literally ``true`` (anything
else is a 400 naming it, and nothing is deleted); ``user`` (default: the caller's own) only an
admin key — or a keyless loopback server — may set to another user (403 otherwise). The answer
is ``{"user": "<id>", "forgotten": <records deleted>}``; forgetting a user with nothing stored
deletes nothing and answers ``0``. What goes is what :meth:`tianma.runtime.Runtime.forget`
deletes: every record and every copy of its text in every file of the home (SQL, indexes,
windows, spans, chat history). Errors
are answered as ``{"error": …}`` (:mod:`tianma.serve.error_handlers`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tianma.errors import BadRequestError, ForbiddenError
from tianma.serve.bodies import validated
from tianma.serve.context import context_of
from tianma.serve.http import authenticate, json_body

PATH = "/tianma/forget"
MAX_USER_ID = 200


class ForgetBody(BaseModel):
    """The request body (other fields are ignored)."""

    model_config = ConfigDict(extra="allow", strict=True)

    confirm: bool
    user: str | None = Field(default=None, min_length=1, max_length=MAX_USER_ID)


async def forget_user(request: Request) -> Response:
    """Body: ``{"confirm": true, "user": …}`` (see the module docstring).

    Raises:
        UnauthorizedError: keys are required and the request has none, or an unknown one.
        BadRequestError: the body is malformed, or ``confirm`` is not ``true``.
        ForbiddenError: a non-admin names another user.
    """
    rt = context_of(request).runtime
    principal = authenticate(request)
    body = validated(ForgetBody, await json_body(request))
    if not body.confirm:
        raise BadRequestError(
            "confirm must be true: forgetting deletes everything tianma holds about the user and cannot be undone",
            param="confirm",
        )
    user = principal.user_id if body.user is None else body.user
    if user != principal.user_id and not principal.admin:
        raise ForbiddenError("only an admin key may forget another user", param="user")
    forgotten = await run_in_threadpool(rt.forget, user)
    return JSONResponse({"user": user, "forgotten": forgotten})


def routes() -> list[BaseRoute]:
    return [Route(PATH, forget_user, methods=["POST"])]
