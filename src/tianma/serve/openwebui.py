"""How Open WebUI talks to the model behind it, read from its source (0.12): what is a turn.

* **Background tasks** — title, tags, follow-ups, query generation, autocomplete: a user
  message starting with ``### Task:`` (``serve.task_prefixes``); the **memory reviewer**: the
  system prompt “You are Open WebUI's private memory reviewer.” and a user message “Review the
  completed conversation turn and decide whether long-term memory should change.” Passed on
  to Ollama, never a turn.
* **A message with files, a knowledge base or web search** is wrapped in its RAG template,
  which also starts with ``### Task:`` but carries ``<context>…</context>`` (0.12: then the
  user's message, after an ``<attached_files>`` list; older templates: ``<user_query>…``): a
  turn, whose text (recorded, searched, learnt from) is the user's own message; the retrieved
  documents and the file list go to the model, never into memory.
* **Its own memory** arrives as a ``<memory_context>…</memory_context>`` block in the system
  prompt: removed before the model sees the prompt (tianma's memory is already there), never stored.
* **Its task, when the admin lets it say**: the custom header ``X-Tianma-Task: {{TASK}}`` on the
  connection to tianma carries each request's task name (empty for the user's message) — then
  that decides, not the message's shape (a user's message starting ``### Task:`` is a turn).
* ``X-OpenWebUI-Chat-Id`` names the chat (with ``ENABLE_FORWARD_USER_INFO_HEADERS=true``);
  ``X-OpenWebUI-User-Id`` the user — used only when the operator trusts the proxy
  (``serve.trust_openwebui_user``) and the proxy holds an admin key (or the server is keyless);
  with ``serve.openwebui_jwt_secret`` the signed ``X-OpenWebUI-User-Jwt`` is verified instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import jwt

from tianma.errors import BadUserTokenError
from tianma.serve.auth import Principal
from tianma.settings import ServeSettings

TASK_HEADER = "x-tianma-task"
"""Set in Open WebUI's connection to tianma as the custom header ``X-Tianma-Task: {{TASK}}``,
it names each request's task (title_generation, memory_review …; empty for the user's message)."""
CHAT_HEADER = "x-openwebui-chat-id"
USER_HEADER = "x-openwebui-user-id"
JWT_HEADER = "x-openwebui-user-jwt"
JWT_ISSUER = "open-webui"
MEMORY_REVIEWER = "You are Open WebUI's private memory reviewer"
MEMORY_REVIEW = "Review the completed conversation turn and decide whether long-term memory should change"
_ATTACHED_FILES = re.compile(r"^\s*<attached_files>.*?</attached_files>\s*", re.DOTALL)
_USER_ID = re.compile(r"^[A-Za-z0-9._@:-]{1,128}$")


def _text(message: Mapping[str, Any]) -> str:
    return str(message.get("content") or "")  # Ollama's form: both APIs convert to it first


def user_query(text: str) -> str | None:
    """The user's own words inside a RAG-wrapped message or after an ``<attached_files>`` block,
    or None when the message is neither (a background task's prompt, or plain text)."""
    said = text
    if text.lstrip().startswith("### Task:"):
        found = _between(text, "<user_query>", "</user_query>")
        if found is not None:
            said = found
        elif _rag_wrapped(text):  # 0.12's template: the documents in <context>, then the message
            said = text.rsplit("</context>", 1)[1]
        else:
            return None
    elif not text.lstrip().startswith("<attached_files>"):
        return None
    return _ATTACHED_FILES.sub("", said, count=1).strip() or None


def _between(text: str, opening: str, closing: str) -> str | None:
    """The text between the first ``opening`` and the ``closing`` after it (found in linear time:
    a regex search restarts at every opening of a crafted body)."""
    start = text.find(opening)
    if start < 0:
        return None
    end = text.find(closing, start + len(opening))
    return None if end < 0 else text[start + len(opening) : end]


def _rag_wrapped(text: str) -> bool:
    """Open WebUI's RAG template: a ``<context>`` block, and no ``<chat_history>`` before it
    (the title, tags and query tasks quote the chat; none of them carries ``<context>``)."""
    start = text.find("<context>")
    return start >= 0 and "</context>" in text[start:] and "<chat_history>" not in text[:start]


def named_task(headers: Mapping[str, str]) -> str | None:
    """The task the client named in :data:`TASK_HEADER` ("" for the user's own message), or None
    when it sent no such header."""
    value = headers.get(TASK_HEADER)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == TASK_HEADER), None)
    return None if value is None else value.strip()


def is_background_task(messages: Sequence[Mapping[str, Any]], task_prefixes: Sequence[str]) -> bool:
    """A client's own background call (a title, tags, the memory review), not the user talking."""
    if not messages:
        return False
    if any(m.get("role") == "system" and _text(m).lstrip().startswith(MEMORY_REVIEWER) for m in messages):
        return True
    last = _text(messages[-1]).lstrip()
    if last.startswith(MEMORY_REVIEW):
        return True
    return any(last.startswith(p) for p in task_prefixes if p) and user_query(last) is None


def without_memory_context(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with Open WebUI's ``<memory_context>`` blocks removed from system prompts."""
    out = []
    for m in messages:
        content = m.get("content")
        if m.get("role") == "system" and isinstance(content, str) and "<memory_context>" in content:
            m = {**m, "content": _without_blocks(content, "<memory_context>", "</memory_context>")}
        out.append(m)
    return out


def _without_blocks(text: str, opening: str, closing: str) -> str:
    """``text`` with every ``opening … closing`` block cut out, the pieces around it on lines of
    their own (linear: a regex would restart at each opening, and at each space, of a crafted prompt)."""
    kept, pos = [], 0
    while (start := text.find(opening, pos)) >= 0 and (end := text.find(closing, start + len(opening))) >= 0:
        kept.append(text[pos:start])
        pos = end + len(closing)
    kept.append(text[pos:])
    return "\n".join(part.strip() for part in kept if part.strip())


def forwarded_user(headers: Mapping[str, str], trusted: bool) -> str | None:
    """The Open WebUI user a trusted proxy names, or None (not trusted, absent or malformed)."""
    value = headers.get(USER_HEADER, "").strip()
    return value if trusted and _USER_ID.fullmatch(value) else None


def signed_user(headers: Mapping[str, str], secret: str) -> str | None:
    """The Open WebUI user a signed ``X-OpenWebUI-User-Jwt`` names (its ``sub``), or None when the
    request carries none.

    Raises:
        BadUserTokenError: the token is not HS256 with ``secret``, is expired, or names no usable user.
    """
    token = headers.get(JWT_HEADER, "").strip()
    if not token:
        return None
    try:
        claims = jwt.decode(token, secret, algorithms=["HS256"], issuer=JWT_ISSUER,
                            options={"require": ["sub", "exp", "iss"]})  # fmt: skip
    except jwt.PyJWTError as exc:
        raise BadUserTokenError(f"X-OpenWebUI-User-Jwt does not verify: {exc}") from exc
    user = str(claims.get("sub") or "")
    if not _USER_ID.fullmatch(user):
        raise BadUserTokenError("X-OpenWebUI-User-Jwt names no usable user id")
    return user


def request_user(principal: Principal, headers: Mapping[str, str], serve: ServeSettings) -> str:
    """Whose memory a request from Open WebUI is about: the signed user (``serve.openwebui_jwt_secret``),
    else the forwarded one (trusted, with an admin key or keyless), else the key's user.

    Raises:
        BadUserTokenError: a signed user header that does not verify.
    """
    if serve.openwebui_jwt_secret is not None:  # signed by Open WebUI: verified, whoever's key it is
        return signed_user(headers, serve.openwebui_jwt_secret.get_secret_value()) or principal.user_id
    forwarded = forwarded_user(headers, serve.trust_openwebui_user) if principal.admin else None
    return forwarded or principal.user_id
