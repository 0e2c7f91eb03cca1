"""
title: tianma feedback
author: tianma
version: 0.1.0
required_open_webui_version: 0.12.0
description: Sends each 👍/👎 given in Open WebUI, and its comment, to tianma as feedback on the rated turn.

An Open WebUI Event Function (install it as admin in Open WebUI under Admin Panel, Functions,
then enable it). On feedback.created and feedback.updated it loads the rating and its chat from
Open WebUI's database, finds the rated reply and the user's message before it, and sends them
to tianma's POST /tianma/feedback/openwebui with the key and user headers Open WebUI sends to
its Ollama connection, so tianma files the rating under the same user and chat as the turn.
It never raises into Open WebUI; every failure is one line in Open WebUI's log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import BaseModel, Field

log = logging.getLogger("tianma.openwebui_feedback")
RATED = ("feedback.created", "feedback.updated")
DEFAULT_URL = "http://127.0.0.1:11435"
"""``tianma serve``'s own default address."""
PATH = "/tianma/feedback/openwebui"


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def rated_turn(chat: Mapping[str, Any], message_id: str) -> tuple[str, str] | None:
    """The rated reply and the user's message it answered, from a chat's ``history``."""
    history = chat.get("history")
    messages = history.get("messages") if isinstance(history, dict) else None
    if not isinstance(messages, dict):
        return None
    reply = messages.get(message_id)
    if not isinstance(reply, dict) or reply.get("role") != "assistant":
        return None
    asked = messages.get(reply.get("parentId") or "")
    if not isinstance(asked, dict) or asked.get("role") != "user":
        return None
    return text_of(reply.get("content")), text_of(asked.get("content"))


def rating_of(value: Any) -> int | None:
    """1 or -1 (Open WebUI keeps either a number or its text), else None."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number in (1, -1) else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def report(feedback: Mapping[str, Any], chat: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What tianma is sent about one feedback (``FeedbackModel`` as a dict) on a message of
    ``chat`` (the chat's ``chat`` field; None: the snapshot the feedback carries), or None when it
    is not a 👍/👎 on a reply found in the chat."""
    data = feedback.get("data") or {}
    meta = feedback.get("meta") or {}
    rating = rating_of(data.get("rating"))
    chat_id, message_id = meta.get("chat_id"), meta.get("message_id")
    if feedback.get("type") != "rating" or rating is None or not isinstance(chat_id, str):
        return None
    if not isinstance(message_id, str):
        return None
    if chat is None:
        snapshot = (feedback.get("snapshot") or {}).get("chat") or {}
        chat = snapshot.get("chat") if isinstance(snapshot, dict) else None
    turn = rated_turn(chat, message_id) if isinstance(chat, Mapping) else None
    if turn is None:
        return None
    return {
        "feedback_id": str(feedback.get("id")),
        "user_id": str(feedback.get("user_id")),
        "chat_id": chat_id,
        "message_id": message_id,
        "rating": rating,
        "reason": _text_or_none(data.get("reason")),
        "comment": _text_or_none(data.get("comment")),
        "reply": turn[0],
        "user_text": turn[1],
    }


def endpoint(base_url: str) -> str:
    """tianma's feedback URL under ``base_url`` (an OpenAI-style ``…/v1`` address works too)."""
    base = base_url.strip().rstrip("/")
    base = base.removesuffix("/v1").rstrip("/")
    return (base or DEFAULT_URL) + PATH


class Event:
    """Open WebUI calls :meth:`event` for every event; this one acts on ratings only."""

    class Valves(BaseModel):
        tianma_url: str = Field(
            default="",
            description="tianma's address, e.g. http://nas:11435. Empty: the Ollama connection below, "
            "else http://127.0.0.1:11435",
        )
        tianma_key: str = Field(default="", description="tianma API key. Empty: that Ollama connection's key")
        ollama_connection: int = Field(default=0, description="Which Ollama connection is tianma (0 = the first)")
        timeout_s: float = Field(default=5.0, description="Seconds to wait for tianma")

    def __init__(self) -> None:
        self.valves = self.Valves()

    async def event(self, event: dict[str, Any], __request__: Any = None, **_: Any) -> None:
        if event.get("event") not in RATED:
            return
        feedback_id = (event.get("subject") or {}).get("id")
        try:
            await self.send(str(feedback_id), __request__)
        except Exception:  # never into Open WebUI: a lost rating is one log line
            log.exception("tianma feedback: could not send Open WebUI feedback %s", feedback_id)

    async def send(self, feedback_id: str, request: Any) -> None:
        """Load the feedback and its chat, and post the report to tianma."""
        from open_webui.models.chats import Chats
        from open_webui.models.feedbacks import Feedbacks
        from open_webui.models.users import Users

        feedback = await Feedbacks.get_feedback_by_id(feedback_id)
        if feedback is None:
            return
        found = feedback.model_dump()
        chat_id = str((found.get("meta") or {}).get("chat_id") or "")
        chat = await Chats.get_chat_by_id_and_user_id(chat_id, feedback.user_id) if chat_id else None
        body = report(found, chat.chat if chat is not None else None)
        if body is None:
            log.info("tianma feedback: %s is not a rating of a reply in its chat; not sent", feedback_id)
            return
        user = await Users.get_user_by_id(feedback.user_id)
        url, headers = await self.target(request, chat_id, user)
        async with httpx.AsyncClient(timeout=self.valves.timeout_s) as client:
            answer = await client.post(url, json=body, headers=headers)
        level = logging.INFO if answer.status_code in (200, 404) else logging.WARNING
        log.log(level, "tianma feedback: %s → %s %s", feedback_id, answer.status_code, answer.text[:300])

    async def target(self, request: Any, chat_id: str, user: Any) -> tuple[str, dict[str, str]]:
        """tianma's URL and the headers Open WebUI sends its Ollama connection (key, user, chat)."""
        url, key, config = self.valves.tianma_url.strip(), self.valves.tianma_key.strip(), {}
        if not url:
            try:
                from open_webui.routers.ollama import get_ollama_connection

                url, config, connection_key = await get_ollama_connection(self.valves.ollama_connection)
                key = key or str(connection_key or "")
            except Exception:
                log.info("tianma feedback: no Ollama connection %d; using %s", self.valves.ollama_connection,
                         DEFAULT_URL)  # fmt: skip
                url = DEFAULT_URL
        headers: dict[str, str] = {"Content-Type": "application/json"}
        try:
            from open_webui.utils.headers import get_headers_and_cookies

            made, _cookies = await get_headers_and_cookies(request, url, key or None, config or {},
                                                           metadata={"chat_id": chat_id}, user=user)  # fmt: skip
            headers = {str(k): str(v) for k, v in dict(made).items()}
        except Exception:
            log.exception("tianma feedback: Open WebUI's connection headers failed; sending the key only")
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return endpoint(str(url)), headers
