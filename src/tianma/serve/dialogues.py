"""Which dialogue a client's request continues: its conversation id, or its message history.

Clients of the Ollama and OpenAI APIs send the whole history with each request and most send
no conversation id. A request continues the dialogue whose last turn ended with exactly the
history it sends (a fingerprint of the user/assistant messages, kept for the last
``capacity`` turns). A history no longer known (the proxy restarted, the client edited it)
falls back to a dialogue derived from its first exchange, so later turns still agree.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

CONVERSATION_FIELDS = ("conversation_id", "chat_id", "session_id")
"""Body fields (top level or under ``metadata``) a client may name its conversation with."""
CONVERSATION_HEADERS = ("x-tianma-dialogue", "x-openwebui-chat-id", "x-conversation-id", "x-chat-id")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def _said(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The user/assistant messages as (role, text with whitespace collapsed)."""
    return [
        (str(m.get("role")), " ".join(str(m.get("content") or "").split()))
        for m in messages
        if m.get("role") in ("user", "assistant")
    ]


def fingerprint(user_id: str, messages: Sequence[dict[str, Any]]) -> str:
    """One key for a user's history (system prompts and whitespace do not count)."""
    return _digest(user_id, json.dumps(_said(messages), ensure_ascii=False))


def client_conversation(body: dict[str, Any], headers: dict[str, str]) -> str | None:
    """The conversation id the client sent, if any."""
    for name in CONVERSATION_HEADERS:
        if headers.get(name):
            return headers[name]
    meta = body.get("metadata")
    for source in (body, meta if isinstance(meta, dict) else {}):
        for name in CONVERSATION_FIELDS:
            value = source.get(name)
            if isinstance(value, str | int) and str(value).strip():
                return str(value)
    return None


class DialogueTracker:
    """Remembers which dialogue each recent history belongs to (bounded, thread-safe)."""

    def __init__(self, capacity: int = 4096) -> None:
        self._known: OrderedDict[str, str] = OrderedDict()
        self._asked: OrderedDict[str, tuple[str, str]] = OrderedDict()
        """fingerprint of a turn's request (history and message) → the turn's event and dialogue."""
        self._latest: OrderedDict[str, str] = OrderedDict()
        """dialogue → the event of its latest turn."""
        self._capacity = capacity
        self._lock = threading.Lock()

    def resolve(self, user_id: str, history: Sequence[dict[str, Any]], conversation: str | None) -> str:
        """The dialogue id of a request whose messages before this turn are ``history``."""
        if conversation is not None:  # namespaced: two users' "1" are different dialogues
            return _digest("client", user_id, conversation)
        said = _said(history)
        if not said:
            return uuid.uuid4().hex
        with self._lock:
            known = self._known.get(fingerprint(user_id, history))
            if known is None and said[-1][0] == "assistant":  # after a stop: however much the client kept
                known = self._known.get(_partial_key(user_id, history[:-1]))
        if known is not None:
            return known
        first_user = next((t for r, t in said if r == "user"), "")
        first_reply = next((t for r, t in said if r == "assistant"), "")
        return _digest("history", user_id, first_user, first_reply)

    def of_request(
        self, user_id: str, messages: Sequence[dict[str, Any]], body: dict[str, Any], headers: dict[str, str]
    ) -> str:
        """The dialogue of a chat request: its conversation id, else the messages before its last."""
        return self.resolve(user_id, messages[:-1], client_conversation(body, headers))

    def remember(self, user_id: str, history: Sequence[dict[str, Any]], dialogue_id: str, partial: bool = False) -> None:
        """After a turn: ``history`` (now ending with the reply) continues ``dialogue_id``.

        ``partial``: the user stopped the reply, and the client keeps however much of it had
        arrived; the history continues the dialogue whatever its last reply says.
        """
        keys = [fingerprint(user_id, history)]
        if partial:
            keys.append(_partial_key(user_id, history[:-1]))
        with self._lock:
            for key in keys:
                self._known[key] = dialogue_id
                self._known.move_to_end(key)
            while len(self._known) > self._capacity:
                self._known.popitem(last=False)


    def asked(self, user_id: str, request: Sequence[dict[str, Any]], event_id: str, dialogue_id: str) -> None:
        """After a turn: the request ``request`` (ending with the user's message) got ``event_id``."""
        key = fingerprint(user_id, request)
        with self._lock:
            self._asked[key] = (event_id, dialogue_id)
            self._asked.move_to_end(key)
            self._latest[dialogue_id] = event_id
            self._latest.move_to_end(dialogue_id)
            for known in (self._asked, self._latest):
                while len(known) > self._capacity:
                    known.popitem(last=False)

    def regenerates(
        self, user_id: str, request: Sequence[dict[str, Any]], conversation: str | None = None
    ) -> tuple[str, str] | None:
        """The event (and its dialogue) whose reply this request asks for again: a request with
        exactly the history and message of the latest turn of a dialogue, i.e. its reply was
        thrown away (regenerate, retry) — in the same conversation when the client names one. The
        same first message after the dialogue went on is a new chat, and so is a first message
        without a conversation id (“你好” in a new chat is not a retry of yesterday's “你好”)."""
        if not request or request[-1].get("role") != "user":
            return None
        if conversation is None and not _said(request[:-1]):
            return None
        with self._lock:
            found = self._asked.get(fingerprint(user_id, request))
            if found is None or self._latest.get(found[1]) != found[0]:
                return None
        if conversation is not None and self.resolve(user_id, (), conversation) != found[1]:
            return None
        return found

    def continues(self, user_id: str, request: Sequence[dict[str, Any]]) -> tuple[str, str] | None:
        """The turn (event, dialogue) whose request is exactly ``request`` (its answer goes on:
        “continue”, a tool round)."""
        with self._lock:
            return self._asked.get(fingerprint(user_id, request))


def _partial_key(user_id: str, before_reply: Sequence[dict[str, Any]]) -> str:
    """The key of a history whose last reply was stopped: the messages before that reply."""
    return _digest("stopped", fingerprint(user_id, before_reply))
