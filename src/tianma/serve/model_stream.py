"""The model's answer read on the event loop and handed to a turn's worker thread, piece by piece.

A turn runs in a worker thread (the graph is synchronous), but the connection to Ollama lives
on the server's event loop: cancelling it there closes the connection at once — also while
Ollama is still reading the prompt and has sent nothing — and Ollama stops generating. That is
how a stop (the client went away) and a shutdown end a model call within moments instead of
when the model finishes.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from tianma.serve.upstream import Upstream, UpstreamReply

_END = object()


class ModelStreams:
    """The model calls of the running turns, each cancellable from any thread."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self._running: dict[threading.Event, Future[None]] = {}
        self._lock = threading.Lock()
        self._closing = False

    def read(self, loop: asyncio.AbstractEventLoop, body: dict[str, Any], reply: UpstreamReply,
             stop: threading.Event) -> Iterator[str]:  # fmt: skip
        """Called in a worker thread: the answer's pieces, until it ends or is cancelled
        (:meth:`cancel` after ``stop`` was set, :meth:`cancel_all`; the pieces then just end).
        Raises what the upstream raised."""
        pieces: queue.SimpleQueue[object] = queue.SimpleQueue()

        async def pump() -> None:
            try:
                async for piece in self.upstream.chat_stream(body, reply):
                    pieces.put(piece)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # handed to the worker thread
                pieces.put(exc)
            finally:
                pieces.put(_END)

        with self._lock:  # one lock with cancel(): a stop set before this is seen, one after finds the call
            if self._closing or stop.is_set():
                return
            future = asyncio.run_coroutine_threadsafe(pump(), loop)
            self._running[stop] = future
        try:
            while (item := pieces.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield str(item)
        finally:
            future.cancel()
            with self._lock:
                self._running.pop(stop, None)

    def cancel(self, stop: threading.Event) -> None:
        """End the model call of the turn whose ``stop`` was just set (its client went away)."""
        with self._lock:
            future = self._running.get(stop)
        if future is not None:
            future.cancel()

    def cancel_all(self) -> None:
        """End every running model call now and start no new one (the server is stopping)."""
        with self._lock:
            self._closing = True
            running = list(self._running.values())
        for future in running:
            future.cancel()
