"""A local stand-in for the Ollama daemon: Ollama's real HTTP protocol, with scripted answers.

It speaks what ``ollama serve`` 0.12 speaks (server/routes.go and api/types.go at the v0.12.0
tag, https://github.com/ollama/ollama): HTTP/1.1 keep-alive, ``application/x-ndjson`` chunked
streams ending in a ``done`` chunk with ``done_reason`` and the metrics, Go-style JSON
(compact, ``<>&`` escaped) and the same status codes and error bodies, which differ by
endpoint and by version:

- ``/api/chat``: ``model 'NAME' not found`` (404) since 0.12.0; before that
  ``model "NAME" not found, try pulling it first`` (404).
- ``/api/embed``: ``model "NAME" not found, try pulling it first`` (404).
- ``/api/generate`` and ``/api/show``: ``model 'NAME' not found`` (404).

Everything a test may change is a plain attribute: ``models``, ``reply``, ``delay``,
``piece_delay``, ``version``; ``requests``, ``errors`` and ``cut_off`` record what happened.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np

Reply = Callable[[list[dict[str, Any]]], str]
"""Computes the assistant's text from the request's messages (``role``/``content`` dicts)."""

DEFAULT_MODELS = ("qwen2.5:7b", "bge-m3:latest")
EMBED_DIM = 64
_EMBEDDING_FAMILIES = ("bge", "embed", "e5", "minilm")
_PIECE = re.compile(r"\s*(?:[A-Za-z0-9_'.-]+|\S)|\s+$")
"""One "token" of a streamed reply: a word or a single other character, with leading space."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    body: dict[str, Any] | None
    """The request's JSON body (``None`` for GET or a body that is not a JSON object)."""


def echo_reply(messages: list[dict[str, Any]]) -> str:
    """The default reply: the last user message, echoed."""
    last: dict[str, Any] = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    return f"你说：{last.get('content', '')}"


def pieces(text: str) -> list[str]:
    """How the stand-in splits a reply into streamed chunks (joined, they give ``text`` back)."""
    return _PIECE.findall(text)


def hashed_embedding(text: str) -> list[float]:
    """Hashed character uni/bi-grams, L2-normalised like Ollama's ``normalize``."""
    vec = [0.0] * EMBED_DIM
    low = text.lower()
    for gram in [*low, *(low[i : i + 2] for i in range(len(low) - 1))]:
        if gram.strip():
            digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=4).digest()
            vec[int.from_bytes(digest, "little") % EMBED_DIM] += 1.0
    return _normalised(vec)


def _normalised(vec: Sequence[float]) -> list[float]:
    array = np.asarray(vec, dtype=np.float64)
    norm = max(float(np.linalg.norm(array)), 1e-12)
    return [float(np.float32(v)) for v in array / norm]


class OllamaStandin:
    """A real HTTP server on 127.0.0.1 (a free port) answering like the Ollama daemon.

    Args:
        models: installed model tags, as ``ollama list`` shows them.
        reply: computes the assistant's text; default echoes the last user message.
        delay: seconds to wait before answering chat, generate and embed (to trip timeouts).
        piece_delay: seconds between two streamed pieces (a model's speed: 0.05 ≈ 20 tokens/s).
        version: what ``/api/version`` reports; chat's not-found body follows it.
    """

    def __init__(
        self,
        models: Sequence[str] = DEFAULT_MODELS,
        reply: Reply = echo_reply,
        delay: float = 0.0,
        version: str = "0.12.0",
        piece_delay: float = 0.0,
    ) -> None:
        self.models = list(models)
        self.reply = reply
        self.delay = delay
        self.piece_delay = piece_delay
        self.version = version
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        """Exceptions the handler did not expect (a test asserts there are none)."""
        self.cut_off: list[str] = []
        """Paths of answers the client closed before they ended (the client stopped reading)."""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.standin = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="ollama-standin", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The recorded requests for one path, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def start(self) -> OllamaStandin:
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, wake delayed answers, drop kept-alive connections, join every thread."""
        self._stop.set()
        self._server.shutdown()
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(OSError):  # already closed by the client
                    conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> OllamaStandin:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- what the daemon knows ------------------------------------------------------------

    def resolve(self, name: str) -> str | None:
        """The installed tag a request's model name means (``:latest`` implied, any case)."""
        wanted = _with_tag(name).lower()
        return next((m for m in self.models if _with_tag(m).lower() == wanted), None)

    def chat_not_found(self, name: str) -> str:
        if _version_tuple(self.version) >= (0, 12, 0):
            return f"model '{name}' not found"
        return f"model {json.dumps(name, ensure_ascii=False)} not found, try pulling it first"

    def model_entry(self, name: str) -> dict[str, Any]:
        """One ``/api/tags`` row, deterministic per name."""
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
        when = datetime(2025, 9, 17, 10, 21, 33, tzinfo=UTC) - timedelta(days=self.models.index(name))
        return {
            "name": _with_tag(name),
            "model": _with_tag(name),
            "modified_at": when.astimezone(_TZ_PLUS8).strftime("%Y-%m-%dT%H:%M:%S.123456789+08:00"),
            "size": 4_683_087_332 - 1000 * len(name),
            "digest": digest,
            "details": _details(name),
        }

    def wait(self) -> bool:
        """Sleep ``delay`` seconds like a busy model; False when the stand-in is closing."""
        return not self._stop.wait(self.delay) if self.delay > 0 else True


class _Server(ThreadingHTTPServer):
    standin: OllamaStandin

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if exc is not None and not isinstance(exc, ConnectionError):
            self.standin.errors.append(exc)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streams, as Go's net/http
    disable_nagle_algorithm = True  # Go sets TCP_NODELAY on every connection: no 40 ms stalls between chunks
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.standin._lock:
            self.server.standin._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.standin._lock:
            self.server.standin._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # quiet, like a test double should be
        pass

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        self._record(None)
        if self.path == "/":
            self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
        elif self.path == "/api/version":
            self._json(200, {"version": self.server.standin.version})
        elif self.path == "/api/tags":
            st = self.server.standin
            self._json(200, {"models": [st.model_entry(m) for m in st.models]})
        elif self.path == "/api/ps":  # loaded models: none (Open WebUI asks with every model list)
            self._json(200, {"models": []})
        else:
            self._send(404, b"404 page not found", "text/plain")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError as exc:
            self._record(None)
            return self._json(400, {"error": str(exc)})
        self._record(body if isinstance(body, dict) else None)
        if body is None:
            return self._json(400, {"error": "missing request body"})
        handler = {
            "/api/chat": self._chat,
            "/api/generate": self._generate,
            "/api/embed": self._embed,
            "/api/show": self._show,
        }.get(self.path)
        if handler is None:
            return self._send(404, b"404 page not found", "text/plain")
        try:
            handler(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout, stop)
            self.close_connection = True
            with self.server.standin._lock:
                self.server.standin.cut_off.append(self.path)

    # -- endpoints --------------------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> None:
        st, name = self.server.standin, str(body.get("model") or "")
        if not name:
            return self._json(400, {"error": "model is required"})
        installed = st.resolve(name)
        if installed is None:
            return self._json(404, {"error": st.chat_not_found(name)})
        if "completion" not in _capabilities(installed):
            return self._json(400, {"error": f"{json.dumps(name)} does not support chat"})
        start = time.monotonic_ns()
        if not st.wait():
            return
        messages = list(body.get("messages") or [])
        if not messages:
            done = {"role": "assistant", "content": ""}
            return self._json(200, _chunk(name, message=done, done=True, done_reason="load"))
        text = st.reply(messages)
        prompt = sum(len(pieces(str(m.get("content", "")))) for m in messages)
        self._answer(body, start, prompt, text, lambda t: {"message": {"role": "assistant", "content": t}})

    def _generate(self, body: dict[str, Any]) -> None:
        st, name = self.server.standin, str(body.get("model") or "")
        if st.resolve(name) is None:
            return self._json(404, {"error": f"model '{name}' not found"})
        start = time.monotonic_ns()
        if not st.wait():
            return
        prompt = str(body.get("prompt") or "")
        if not prompt:
            return self._json(200, _chunk(name, response="", done=True, done_reason="load"))
        system = [{"role": "system", "content": str(body["system"])}] if body.get("system") else []
        messages = [*system, {"role": "user", "content": prompt}]
        text = st.reply(messages)
        context = [int(b) for b in hashlib.sha256(prompt.encode("utf-8")).digest()[:8]]
        self._answer(
            body,
            start,
            len(pieces(prompt)),
            text,
            lambda t: {"response": t},
            final_extra={"context": context},
        )

    def _embed(self, body: dict[str, Any]) -> None:
        st, name = self.server.standin, str(body.get("model") or "")
        raw = body.get("input")
        if isinstance(raw, str):
            texts = [raw] if raw else []
        elif isinstance(raw, list) and all(isinstance(t, str) for t in raw):
            texts = list(raw)
        elif raw is None:
            texts = []
        else:
            return self._json(400, {"error": "invalid input type"})
        if not name:
            return self._json(400, {"error": "model is required"})
        if st.resolve(name) is None:
            found = f"model {json.dumps(name, ensure_ascii=False)} not found, try pulling it first"
            return self._json(404, {"error": found})
        start = time.monotonic_ns()
        if not st.wait():
            return
        vectors = [hashed_embedding(t) for t in texts]
        dims = int(body.get("dimensions") or 0)
        if 0 < dims < EMBED_DIM:  # Ollama truncates the normalised vector, then normalises again
            vectors = [_normalised(v[:dims]) for v in vectors]
        out: dict[str, Any] = {"model": name, "embeddings": vectors}
        if texts:
            out |= {
                "total_duration": time.monotonic_ns() - start + 1,
                "load_duration": 1_019_500,
                "prompt_eval_count": sum(len(pieces(t)) for t in texts),
            }
        self._json(200, out)

    def _show(self, body: dict[str, Any]) -> None:
        st, name = self.server.standin, str(body.get("model") or body.get("name") or "")
        if not name:
            return self._json(400, {"error": "model is required"})
        installed = st.resolve(name)
        if installed is None:
            return self._json(404, {"error": f"model '{name}' not found"})
        details = _details(installed)
        arch = details["family"]
        self._json(
            200,
            {
                "modelfile": f'# Modelfile generated by "ollama show"\nFROM {_with_tag(installed)}\n',
                "parameters": 'stop                           "<|im_end|>"',
                "template": "{{ .Prompt }}",
                "details": details,
                "model_info": {
                    "general.architecture": arch,
                    "general.parameter_count": 7_615_616_512,
                    f"{arch}.context_length": 32768,
                    f"{arch}.embedding_length": EMBED_DIM,
                },
                "capabilities": _capabilities(installed),
                "modified_at": st.model_entry(installed)["modified_at"],
            },
        )

    # -- wire format ------------------------------------------------------------------------

    def _answer(
        self,
        body: dict[str, Any],
        start: int,
        prompt_tokens: int,
        text: str,
        content: Callable[[str], dict[str, Any]],
        final_extra: dict[str, Any] | None = None,
    ) -> None:
        """Stream NDJSON chunks (the default) or one JSON object when ``stream`` is false."""
        name, parts = str(body["model"]), pieces(text)
        total = time.monotonic_ns() - start + 1
        metrics = {
            "total_duration": total,
            "load_duration": total // 10 + 1,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": total // 5 + 1,
            "eval_count": len(parts),
            "eval_duration": total // 2 + 1,
        }
        final = _chunk(name, **content(""), done=True, done_reason="stop", **(final_extra or {}), **metrics)
        if body.get("stream") is False:
            return self._json(200, final | content(text))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for part in parts:
            if self.server.standin.piece_delay > 0 and self.server.standin._stop.wait(self.server.standin.piece_delay):
                return
            self._write_chunk(_encode(_chunk(name, **content(part), done=False)) + b"\n")
        self._write_chunk(_encode(final) + b"\n")
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, _encode(payload), "application/json; charset=utf-8")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _record(self, body: dict[str, Any] | None) -> None:
        st = self.server.standin
        with st._lock:
            st.requests.append(RecordedRequest(self.command, self.path, body))


_TZ_PLUS8 = timezone(timedelta(hours=8))
"""Ollama reports file times in the daemon's local zone."""


def _with_tag(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def _capabilities(name: str) -> list[str]:
    return ["embedding"] if any(f in name.lower() for f in _EMBEDDING_FAMILIES) else ["completion"]


def _details(name: str) -> dict[str, Any]:
    family = "bert" if _capabilities(name) == ["embedding"] else "qwen2"
    return {
        "parent_model": "",
        "format": "gguf",
        "family": family,
        "families": [family],
        "parameter_size": "566.70M" if family == "bert" else "7.6B",
        "quantization_level": "F16" if family == "bert" else "Q4_K_M",
    }


def _created_at() -> str:
    """``time.Now().UTC()`` as Go's JSON writes it (RFC 3339, trailing zeros trimmed)."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
    return stamp + "Z"


def _chunk(model: str, **fields: Any) -> dict[str, Any]:
    return {"model": model, "created_at": _created_at(), **fields}


def _encode(payload: dict[str, Any]) -> bytes:
    """Compact JSON with Go's HTML-safe escapes (encoding/json escapes <, > and &)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.encode("utf-8")
