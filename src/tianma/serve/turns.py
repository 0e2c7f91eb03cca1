"""Chat requests from clients run as tianma turns in worker threads, streamed back in order.

A bounded pool runs ``serve.max_concurrent`` turns at once; up to ``serve.max_queue`` more
wait; past that a request is refused with Ollama's own 503 ("server busy"). Each turn's
pieces cross from its worker thread to the request's event loop through an asyncio queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from tianma.errors import ChatModelUnavailableError, ClientGoneError, InvalidInputError, ServerBusyError
from tianma.guardrails.secrets import message_without_secrets
from tianma.guardrails.stream_gate import tail_after
from tianma.serve import openwebui
from tianma.serve.auth import Principal
from tianma.serve.dialogues import DialogueTracker, client_conversation
from tianma.serve.model_stream import ModelStreams
from tianma.serve.upstream import Upstream, UpstreamError, UpstreamReply
from tianma.settings import ServeSettings
from tianma.storage.sql_store import new_id
from tianma.turn import ClientTurn, Turn

if TYPE_CHECKING:
    from tianma.runtime import Runtime

BUSY_ERROR = "server busy, please try again.  maximum pending requests exceeded"
"""Ollama's own words (and status 503) when its queue is full."""
FORWARDED = ("options", "format", "tools", "keep_alive", "think")
"""Fields of a client's chat request sent on to Ollama unchanged."""


DISCONNECT_POLL_S = 0.25
"""How often a request still waiting for its turn's first piece checks that its client is there."""


async def first_item(request: Request, items: AsyncIterator[Item]) -> Item:
    """The turn's first item, while watching the client: a client that goes away before it (the
    user pressed stop while the model was still reading the prompt) stops the turn at once.

    Raises:
        ServerBusyError: the wait line is full.
        ClientGoneError: the client disconnected first.
    """
    task = asyncio.ensure_future(anext(items))
    while True:
        try:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
        except asyncio.CancelledError:  # the request itself is cancelled (shutdown): so is its turn
            task.cancel()
            raise
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()  # the turn's generator closes: its model call is cancelled, the turn records
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await task
            raise ClientGoneError("the client went away before the reply began")


@dataclass(frozen=True)
class ChatRequest:
    """A client's chat request, in Ollama's form whatever API it came through."""

    user_id: str
    model: str
    messages: list[dict[str, Any]]
    dialogue_id: str
    """Which dialogue this turn continues (``DialogueTracker.of_request``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields forwarded to Ollama (``FORWARDED``)."""
    stream: bool = True
    event_id: str = field(default_factory=new_id)
    """The id the turn's event gets (announced in a header before the reply)."""
    regenerates: str | None = None
    """The earlier turn's event this request asks another reply for (then also ``event_id``)."""
    task: str | None = None
    """The client's own name for what the request is, when it says (Open WebUI's ``{{TASK}}`` in
    the :data:`tianma.serve.openwebui.TASK_HEADER` custom header: empty for the user's message);
    None when it does not, and then the message's shape decides."""

    @property
    def text(self) -> str:
        """This turn's user message (the last message; the user's own query when a client
        wrapped it with retrieved documents)."""
        said = str(self.messages[-1].get("content") or "") if self.messages else ""
        return openwebui.user_query(said) or said

    def is_turn(self, task_prefixes: Sequence[str] = ()) -> bool:
        """A user message to answer; anything else (a tool result, a model load, a client's
        background task: :meth:`is_background`) is passed on."""
        return (bool(self.messages) and self.messages[-1].get("role") == "user" and bool(self.text.strip())
                and not self.is_background(task_prefixes))  # fmt: skip

    def is_background(self, task_prefixes: Sequence[str] = ()) -> bool:
        """A client's own call (a title, tags, its memory review): by the task the client names
        (:attr:`task`), else by its shape (:func:`tianma.serve.openwebui.is_background_task`)."""
        if self.task is not None:
            return bool(self.task.strip())
        return openwebui.is_background_task(self.messages, task_prefixes)


def chat_request(
    principal: Principal, model: str, messages: list[dict[str, Any]], body: dict[str, Any],
    headers: dict[str, str], dialogues: DialogueTracker, serve: ServeSettings, extra: dict[str, Any], stream: bool,
) -> ChatRequest:  # fmt: skip
    """The request of a chat call, whichever API it came through: whose memory (the key's
    user, or the Open WebUI user a trusted proxy names), which dialogue, the client's messages
    without its own memory block.

    Raises:
        BadUserTokenError: a signed Open WebUI user header that does not verify.
    """
    user_id = openwebui.request_user(principal, headers, serve)
    messages = openwebui.without_memory_context(messages)
    task = openwebui.named_task(headers)
    again = dialogues.regenerates(user_id, messages, client_conversation(body, headers))
    if again is not None:  # the client threw the reply away: the same turn, answered again
        return ChatRequest(user_id=user_id, model=model, messages=messages, dialogue_id=again[1], extra=extra,
                           stream=stream, event_id=again[0], regenerates=again[0], task=task)  # fmt: skip
    return ChatRequest(user_id=user_id, model=model, messages=messages, task=task,
                       dialogue_id=dialogues.of_request(user_id, messages, body, headers), extra=extra, stream=stream)  # fmt: skip


async def passed_on(req: ChatRequest, body: dict[str, Any], task_prefixes: Sequence[str]) -> bytes:
    """The body a request tianma does not answer itself goes on to Ollama with: as it came, but a
    client's background task (a title, tags, follow-ups, a memory review — each quoting the chat)
    without the chat's secrets, as a turn's history is sent: a model writing a title needs no
    password, and the client keeps what it writes (its chat titles, its own memory). Tool rounds
    and the rest go unchanged. Scanned in a worker thread: a long chat takes a moment."""
    messages = body.get("messages")
    if isinstance(messages, list) and req.is_background(task_prefixes):
        body = {**body, "messages": await asyncio.to_thread(
            lambda: [message_without_secrets(m) if isinstance(m, dict) else m for m in messages])}  # fmt: skip
    return json.dumps(body).encode()


@dataclass
class TurnDone:
    """The end of a turn: the checked reply and what is still to be sent."""

    event_id: str
    dialogue_id: str
    reply: str
    """The reply as the client ends up with it (after the redline check)."""
    tail: str
    """What follows the released pieces (all of ``reply`` for a non-streaming request)."""
    upstream: UpstreamReply
    turn: Turn | None = None
    error: UpstreamError | None = None


Item = str | TurnDone


class TurnRunner:
    """Runs client turns on ``max_concurrent`` worker threads with a bounded wait line."""

    def __init__(self, runtime: Runtime, upstream: Upstream, dialogues: DialogueTracker,
                 max_concurrent: int, max_queue: int) -> None:  # fmt: skip
        self.runtime = runtime
        self.upstream = upstream
        self.dialogues = dialogues
        self._pool = ThreadPoolExecutor(max_concurrent, thread_name_prefix="tianma-turn")
        self._streams = ModelStreams(upstream)
        self._limit = max_concurrent + max_queue
        self._pending = 0
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop: every model call ends now (each turn records what it had), waiting turns are dropped."""
        self.stopping()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def stopping(self) -> None:
        """The server stops accepting requests: end the running model calls now, so the turns
        finish within moments (each recording the reply as far as it came) instead of after the
        model's last word."""
        self._streams.cancel_all()

    async def run(self, request: ChatRequest) -> AsyncIterator[Item]:
        """Released reply pieces (streaming requests only), then one :class:`TurnDone`.

        Raises:
            ServerBusyError: the wait line is full.
        """
        with self._lock:
            if self._pending >= self._limit:
                raise ServerBusyError(BUSY_ERROR)
            self._pending += 1
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Item | BaseException] = asyncio.Queue()

        def put(item: Item | BaseException) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        stop = threading.Event()
        future = self._pool.submit(self._work, request, put, stop, loop)
        done = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                done = isinstance(item, TurnDone)
                yield item
                if done:
                    return
        finally:  # closed before the turn ended: the client went away (the user pressed stop)
            if not done:
                stop.set()
                self._streams.cancel(stop)
            future.add_done_callback(lambda _f: self._release())

    def _release(self) -> None:
        with self._lock:
            self._pending -= 1

    def _work(self, request: ChatRequest, put: Any, stop: threading.Event, loop: asyncio.AbstractEventLoop) -> None:
        try:
            put(self._turn(request, put, stop, loop))
        except BaseException as exc:  # handed to the request task, which raises it
            put(exc)

    def _turn(self, request: ChatRequest, put: Any, stop: threading.Event, loop: asyncio.AbstractEventLoop) -> TurnDone:
        dialogue_id = request.dialogue_id
        reply, failure = UpstreamReply(), _Failure()
        released: list[str] = []

        def release(text: str) -> None:
            released.append(text)
            put(text)

        def stream(messages: list[dict[str, Any]]) -> Iterator[str]:
            body = {**request.extra, "model": request.model, "messages": messages}
            try:
                yield from self._streams.read(loop, body, reply, stop)
            except UpstreamError as exc:
                failure.error = exc
                raise

        client = ClientTurn(tuple(request.messages), stream, release if request.stream else None, request.event_id,
                            stop.is_set, request.regenerates)  # fmt: skip
        try:
            turn = self.runtime.chat(request.user_id, request.text, dialogue_id, client=client)
        except ChatModelUnavailableError as exc:
            error = failure.error or UpstreamError(502, str(exc), "")
            return TurnDone(exc.event_id or request.event_id, dialogue_id, "", "", reply, None, error)
        except InvalidInputError as exc:
            return TurnDone("", dialogue_id, "", "", reply, None, UpstreamError(400, str(exc), ""))
        shown = "".join(released)
        tail = tail_after(shown, turn.reply)
        self.dialogues.remember(
            request.user_id, [*request.messages, {"role": "assistant", "content": shown + tail}], dialogue_id,
            partial=turn.stopped,
        )
        self.dialogues.asked(request.user_id, request.messages, turn.event_id, dialogue_id)
        return TurnDone(turn.event_id, dialogue_id, shown + tail, tail, reply, turn)


@dataclass
class _Failure:
    error: UpstreamError | None = None
