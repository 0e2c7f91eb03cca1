"""``POST /tianma/feedback/openwebui``: Open WebUI's 👍/👎 (and its comment) on the turn it rated.

Open WebUI never tells the model which of its messages a reply became, so its rating arrives as
what it knows — its chat id, the rated reply and the user's message before it — sent by the
Event Function tianma ships (:mod:`tianma.integrations.openwebui_feedback`), with the same key
and user headers Open WebUI sends with its chat requests. The turn is found among the user's
turns of that chat's dialogue (``X-OpenWebUI-Chat-Id`` named it): the latest whose current reply
is the rated one (a regenerate replaces the reply), else the latest whose message is the user's.

Open WebUI reports one rating several times (given, tagged, commented, changed): the first
report records the signal — ``like``; ``dislike``; a 👎 with a comment is a ``correction`` whose
words are the comment — under Open WebUI's feedback id, and later ones only add the comment and
reason to that signal. A rating changed afterwards is noted on the signal but not counted: what
the first one credited cannot be taken back.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tianma.errors import BadRequestError, RecordNotFoundError, TurnNotFoundError
from tianma.guardrails.secrets import storable
from tianma.serve.bodies import check_chars
from tianma.serve.context import ServeContext, context_of
from tianma.serve.http import authenticate, json_body
from tianma.serve.openwebui import request_user
from tianma.storage.external_signals import dialogue_turns, signal_from
from tianma.storage.records import MemoryRecord

PATH = "/tianma/feedback/openwebui"
EXTERNAL_PREFIX = "openwebui:"
"""``records.external_id`` of a signal from Open WebUI: this prefix and its feedback id."""
MAX_ID = 200


@dataclass(frozen=True, slots=True)
class Rating:
    """One report of an Open WebUI rating (the request body)."""

    feedback_id: str
    user_id: str
    """Open WebUI's user id (kept on the signal; whose turn it is comes from the key and headers)."""
    chat_id: str
    message_id: str
    rating: int
    """1 (👍) or -1 (👎)."""
    reason: str | None
    comment: str | None
    reply: str
    """The rated reply, as Open WebUI shows it."""
    user_text: str
    """The user's message the reply answered."""

    @property
    def kind(self) -> str:
        """The signal it makes: like, dislike, or correction (a 👎 with words)."""
        if self.rating > 0:
            return "like"
        return "correction" if self.comment and self.comment.strip() else "dislike"

    def detail(self, kind: str) -> str:
        return f"explicit {kind} in Open WebUI" + (f" ({self.reason})" if self.reason else "")

    def about(self) -> dict[str, Any]:
        return {"feedback_id": self.feedback_id, "user_id": self.user_id, "chat_id": self.chat_id,
                "message_id": self.message_id, "rating": self.rating, "reason": self.reason}  # fmt: skip


def parse_rating(body: dict[str, Any]) -> Rating:
    """The body's rating.

    Raises:
        BadRequestError: a field missing or of the wrong type, a rating other than 1 or -1.
    """
    ids = {}
    for name in ("feedback_id", "chat_id", "message_id", "user_id"):
        value = body.get(name)
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID:
            raise BadRequestError(f"{name} must be a non-empty string of at most {MAX_ID} characters")
        ids[name] = value.strip()
    rating = body.get("rating")
    if isinstance(rating, bool) or rating not in (1, -1):
        raise BadRequestError("rating must be 1 (👍) or -1 (👎)")
    texts = {name: body.get(name) for name in ("reply", "user_text")}
    if not all(isinstance(v, str) for v in texts.values()) or not str(texts["user_text"]).strip():
        raise BadRequestError("reply and user_text must be strings (user_text not empty)")
    notes = {name: body.get(name) for name in ("reason", "comment")}
    if not all(v is None or isinstance(v, str) for v in notes.values()):
        raise BadRequestError("reason and comment must be strings or null")
    return Rating(ids["feedback_id"], ids["user_id"], ids["chat_id"], ids["message_id"], int(rating),
                  notes["reason"] or None, notes["comment"] or None, str(texts["reply"]),
                  str(texts["user_text"]))  # fmt: skip


def _flat(text: str | None) -> str:
    return " ".join((text or "").split())


def match_turn(turns: list[MemoryRecord], reply: str, user_text: str, pii_redaction: bool) -> tuple[MemoryRecord, str] | None:
    """The turn (of ``turns``, latest first) a rating of ``reply`` to ``user_text`` is about, and
    how it was found: ``reply`` (its current reply is the rated one; of several, the latest whose
    message also matches) or ``message`` (the latest with the user's message: the rated reply was
    replaced by a regenerate, or changed on its way). Messages compare as tianma stored them."""
    said = {_flat(user_text), _flat(storable(user_text, pii_redaction)[0])}
    rated = {_flat(reply), _flat(storable(reply, pii_redaction)[0])} - {""}  # stored replies are redacted
    same_reply = [e for e in turns if _flat(e.reply) in rated]
    if same_reply:
        return next((e for e in same_reply if _flat(e.content) in said), same_reply[0]), "reply"
    same_message = next((e for e in turns if _flat(e.content) in said), None)
    return None if same_message is None else (same_message, "message")


class OpenWebUIFeedback:
    """The endpoint; one lock makes a report's look-up and write one step (reports of one
    rating arrive moments apart)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def handle(self, request: Request) -> Response:
        """Errors (no key, a bad body, no such turn) are raised and answered as ``{"error": …}``."""
        ctx = context_of(request)
        principal = authenticate(request)
        user_id = request_user(principal, dict(request.headers), ctx.runtime.settings.serve)
        rating = parse_rating(await json_body(request))
        check_chars(rating.comment, "comment", ctx.runtime.settings.serve.max_message_chars, "serve.max_message_chars")
        return JSONResponse(await run_in_threadpool(self._record, ctx, user_id, rating))

    def _record(self, ctx: ServeContext, user_id: str, rating: Rating) -> dict[str, Any]:
        rt, store = ctx.runtime, ctx.runtime.store
        external_id = EXTERNAL_PREFIX + rating.feedback_id
        with self._lock:
            known = signal_from(store, user_id, external_id)
            if known is not None:
                return _again(ctx, known, rating)
            turns = dialogue_turns(store, user_id, ctx.dialogues.resolve(user_id, (), rating.chat_id))
            found = match_turn(turns, rating.reply, rating.user_text, rt.settings.guardrails.pii_redaction)
            if found is None:
                raise _no_turn(rating.chat_id)
            event, matched = found
            kind = rating.kind
            try:
                signal_id = rt.feedback(event.id, kind, rating.comment, detail=rating.detail(kind),
                                        external_id=external_id, data={"openwebui": rating.about()})  # fmt: skip
            except RecordNotFoundError as exc:  # forgotten in between
                raise _no_turn(rating.chat_id) from exc
        return {"status": "recorded", "signal_id": signal_id, "event_id": event.id, "kind": kind, "matched": matched}


def _no_turn(chat_id: str) -> TurnNotFoundError:
    return TurnNotFoundError(f"no turn of Open WebUI chat {chat_id} has this reply or message "
                             "(is ENABLE_FORWARD_USER_INFO_HEADERS=true in Open WebUI?)")  # fmt: skip


def _again(ctx: ServeContext, signal: MemoryRecord, rating: Rating) -> dict[str, Any]:
    """A later report of a rating already recorded: its comment and reason, never a second count."""
    first = dict(signal.data.get("openwebui") or {})
    kind = str(signal.data.get("type"))
    answer = {"signal_id": signal.id, "event_id": signal.data.get("target_event_id"), "kind": kind}
    if first.get("rating") != rating.rating:  # changed its mind: noted, not counted
        ctx.runtime.revise_feedback(signal.id, data={"openwebui": {**first, "rating_now": rating.rating}})
        return {**answer, "status": "kept", "note": "the rating was changed after it was recorded; the first one counts"}
    words = storable(rating.comment, ctx.runtime.settings.guardrails.pii_redaction)[0] if rating.comment else None
    new_words = bool(words) and words != signal.content
    if new_words and kind == "dislike":  # its comment came afterwards: the same negative signal, now with words
        kind = "correction"
    about = {**first, "reason": rating.reason}
    about.pop("rating_now", None)
    if not new_words and kind == signal.data.get("type") and about == first:
        return {**answer, "status": "unchanged"}
    detail = rating.detail(kind)
    wordless = signal.content == signal.data.get("detail")  # no words yet: the detail stands for them
    content = words if new_words else detail if wordless else None
    ctx.runtime.revise_feedback(signal.id, content=content, data={"type": kind, "detail": detail, "openwebui": about})
    return {**answer, "kind": kind, "status": "updated"}


def routes() -> list[BaseRoute]:
    return [Route(PATH, OpenWebUIFeedback().handle, methods=["POST"])]
