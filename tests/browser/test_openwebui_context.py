"""What Open WebUI adds around a user's message, against the real thing (issue #13): a file
attached in the chat (its RAG template wraps the message) and its own memory (the background
memory review after a turn, its ``<memory_context>`` block in the next one). tianma records the
user's own words only: the documents and Open WebUI's memory reach the model or pass through,
and none of them is ever stored.

Its own Open WebUI (the ``owui`` fixture is per module), told two more things an admin decides
at its first start (:data:`OPENWEBUI_ADMIN_ENV`): which Ollama model embeds documents (there is no
default for ``RAG_EMBEDDING_ENGINE=ollama``) and that memory is reviewed after every turn (off
by default; every 10th turn once on). Everything else is Open WebUI's default: files are
embedded and retrieved (not bypassed, not in full), through tianma to the stand-in's
``/api/embed``; each user's Memory switch is on. The tests run in order: the first signs up.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from tests.browser.openwebui import ASGIApp, Exchange, OpenWebUI, task_kind
from tests.home_scan import files_holding
from tianma.storage.records import MemoryRecord
from tianma.testing.ollama_standin import Reply

MODEL = "qwen2.5:7b"
EMBEDDING_MODEL = "bge-m3:latest"  # the stand-in's embedding model
USER = "me"
"""tianma's keyless default user (Open WebUI's forwarded user is not trusted)."""
MANUAL = "路由器说明书：按住背面的复位孔十秒，指示灯变成紫色就说明重置好了。"
"""The attached file's one sentence: it must reach the model and never tianma's memory."""
QUESTION = "这份说明书里路由器怎么重置？"
ANSWER = "按住背面的复位孔十秒，指示灯变紫就好了。"
CAT = "我家的猫叫年糕，今年三岁了"
CAT_REPLY = "好的，年糕三岁了。"
TOY = "给它买什么玩具好？"
TOY_REPLY = "可以买逗猫棒。"
REMEMBERED = "Owns a three-year-old cat named Niangao (OWUI-MEM-8812)"
"""What the stand-in, as Open WebUI's memory reviewer, asks it to remember: Open WebUI's memory,
in its ``<memory_context>`` from then on, and never in tianma's."""
REVIEWER = "You are Open WebUI's private memory reviewer."
"""Open WebUI 0.12's system prompt for its memory review (backend/open_webui/utils/memory.py)."""


OPENWEBUI_ADMIN_ENV = {
    "RAG_EMBEDDING_MODEL": EMBEDDING_MODEL,  # no default with RAG_EMBEDDING_ENGINE=ollama
    "ENABLE_MEMORY_BACKGROUND_REVIEW": "true",  # off by default, no admin UI for it in 0.12.4
    "MEMORIES_REVIEW_INTERVAL_TURNS": "1",  # every 10th turn by default
}
"""What this module's Open WebUI admin chose at its first start (tests/browser/conftest.py reads it)."""


@pytest.fixture(scope="module")
def owui(owui: OpenWebUI) -> Iterator[OpenWebUI]:
    """tests/browser/conftest.py's Open WebUI, started with :data:`OPENWEBUI_ADMIN_ENV`; the stand-in
    answers the RAG-wrapped question and the memory review as a model would."""
    script = owui.standin.reply
    owui.standin.reply = _model(script)
    yield owui
    owui.standin.reply = script


class BodyTap:
    """Keeps the JSON body of each ``/api/chat`` request tianma receives: what Open WebUI sent,
    before tianma changed anything (the stand-in sees what tianma sent on)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:  # fmt: skip
        if scope["type"] != "http" or scope["path"] != "/api/chat":
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body"):
                    self.bodies.append(json.loads(b"".join(chunks) or b"{}"))
            return message

        await self.app(scope, receiving, send)


@pytest.fixture(scope="module")
def sent(owui: OpenWebUI) -> BodyTap:
    """What Open WebUI sent to tianma (a tap inside the request recorder)."""
    tap = BodyTap(owui.recorder.app)
    owui.recorder.app = tap
    return tap


def _model(script: Reply) -> Reply:
    def reply(messages: list[dict[str, Any]]) -> str:
        last = str(messages[-1].get("content") or "") if messages else ""
        if _is_review(messages):  # remember the cat, at its turn's first review only
            remember = f"user: {CAT}" in last and "(none)" in last
            memory = {"action": "add", "type": "user", "path": "pets", "content": REMEMBERED}
            return json.dumps({"operations": [memory] if remember else []})
        if "<context>" in last and MANUAL in last and last.rstrip().endswith(QUESTION):
            return ANSWER  # the question, wrapped in Open WebUI's RAG template around the file
        answer: str = script(messages)
        return answer

    return reply


def _last(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    return str(messages[-1].get("content") or "")


def _is_review(messages: list[dict[str, Any]]) -> bool:
    return bool(messages) and str(messages[0].get("content") or "").startswith(REVIEWER)


def _reviews(owui: OpenWebUI) -> list[dict[str, Any]]:
    """The memory reviews the stand-in was asked (through tianma), oldest first."""
    return [b for b in owui.chat_bodies() if _is_review(b.get("messages") or [])]


def _kept(owui: OpenWebUI, text: str) -> list[str]:
    """Where tianma keeps ``text``: its records (any kind, any status) and any file in its home
    (SQLite with its WAL, the vector index, checkpoints, spans)."""
    found = [f"record {r.kind} {r.id}" for r in owui.runtime.memories(USER) if text in _record_text(r)]
    return found + [f"file {p}" for p in files_holding(Path(owui.runtime.settings.home), text)]


def _record_text(record: MemoryRecord) -> str:
    return json.dumps([record.content, record.reply, record.data], ensure_ascii=False, default=str)


def _embedded(owui: OpenWebUI, text: str) -> bool:
    """Whether the stand-in was asked (through tianma) to embed ``text``."""
    return any(text in str((r.body or {}).get("input")) for r in owui.standin.requests_to("/api/embed"))


def _chats(owui: OpenWebUI) -> list[Exchange]:
    return [e for e in owui.recorder.exchanges if e.path == "/api/chat"]


def _answered(owui: OpenWebUI, text: str) -> None:
    """Wait for Open WebUI's follow-up suggestions after the turn ``text``: it asks for them once
    the answer has ended (tianma records a turn before its answer ends)."""
    owui.wait_for(lambda: any(task_kind(b) == "follow_ups" and f"USER: {text}" in _last(b) for b in owui.chat_bodies()),
          f"Open WebUI's follow-ups after {text!r}")  # fmt: skip


def _memory_switch(owui: OpenWebUI) -> Any:
    """Settings → Personalization → the Memory switch, in Open WebUI's settings dialog."""
    page = owui.page
    page.get_by_role("button", name="User menu").click()
    page.get_by_role("menuitem", name="Settings").click()
    page.get_by_role("dialog", name="Settings").get_by_role("tab", name="Personalization").click()
    return page.get_by_role("switch", name="Memory")


def test_a_message_with_a_file_is_the_users_question_and_the_file_is_not_memory(
    owui: OpenWebUI, sent: BodyTap, tmp_path: Path
) -> None:
    owui.sign_up("小林", "xiaolin@example.com", "tianma-test-password")
    owui.new_chat(MODEL)
    manual = tmp_path / "manual.txt"
    manual.write_text(MANUAL + "\n", encoding="utf-8")
    page = owui.page
    page.locator("#input-menu-button").click()  # the chat input's "+"
    with page.expect_file_chooser() as chooser:
        page.get_by_role("menuitem", name="Upload Files").click()
    chooser.value.set_files(str(manual))
    # Open WebUI embeds the file through tianma (passed through) with the stand-in's model
    owui.wait_for(lambda: _embedded(owui, MANUAL), "the file's embedding", timeout_s=30)
    page.get_by_role("button", name="manual.txt").wait_for()
    owui.shot("context-file-attached")
    chat = owui.send(QUESTION)
    owui.expect_reply(ANSWER, timeout_s=30)
    owui.shot("context-file-answered")
    _answered(owui, QUESTION)
    # Open WebUI sent the question wrapped in its RAG template around the file's text ...
    (wrapped,) = [b for b in sent.bodies if MANUAL in _last(b)]
    assert _last(wrapped).startswith("### Task:") and "<context>" in _last(wrapped)
    # ... tianma answered it as a turn: one event, the user's question (not the template, not the
    # file) and its reply
    assert [(e.content, e.reply) for e in owui.events()] == [(QUESTION, ANSWER)]
    (event,) = owui.events()
    (turn,) = owui.recorder.turns(chat)
    assert turn.response_headers["x-tianma-event-id"] == event.id
    # the model read the document, after tianma's system prompt (its memory goes there)
    (to_model,) = [b for b in owui.chat_bodies() if MANUAL in _last(b)]
    assert _last(to_model).rstrip().endswith(QUESTION)
    assert to_model["messages"][0]["role"] == "system" and "tianma" in to_model["messages"][0]["content"]
    # nothing tianma keeps holds the file's text (the scan finds the question, so it does look)
    assert {where.split()[0] for where in _kept(owui, QUESTION)} == {"record", "file"}
    assert _kept(owui, MANUAL) == []


def test_memory_review_passes_through_and_open_webuis_memory_is_never_tianmas(
    owui: OpenWebUI, sent: BodyTap
) -> None:
    owui.script.replies |= {CAT: [CAT_REPLY], TOY: [TOY_REPLY]}
    switch = _memory_switch(owui)
    if switch.get_attribute("aria-checked") != "true":  # on by default in Open WebUI 0.12
        switch.click()
    assert switch.get_attribute("aria-checked") == "true"
    owui.shot("context-memory-on")
    owui.page.keyboard.press("Escape")
    before = {e.id for e in owui.events()}
    signals = {s.id for s in owui.runtime.memories(USER, "signal")}
    owui.new_chat(MODEL)
    chat = owui.send(CAT)
    owui.expect_reply(CAT_REPLY)
    # Open WebUI reviews the turn (through tianma); once tianma has answered it ...
    review = owui.wait_for(lambda: next((b for b in sent.bodies if _is_review(b["messages"]) and CAT in _last(b)), None),
                   "Open WebUI's memory review of the turn")  # fmt: skip
    assert review.get("stream") is False and "Review the completed conversation turn" in _last(review)
    owui.wait_for(lambda: len(_chats(owui)) == len(sent.bodies) and all(e.status for e in _chats(owui)),
          "tianma to answer the review")  # fmt: skip
    # ... the turn is the one new event, the review is none and gave no signal
    new = [e for e in owui.events() if e.id not in before]
    assert [(e.content, e.reply) for e in new] == [(CAT, CAT_REPLY)]
    assert {s.id for s in owui.runtime.memories(USER, "signal")} == signals
    assert [t.response_headers["x-tianma-event-id"] for t in owui.recorder.turns(chat)] == [new[0].id]
    # the review reached the model as Open WebUI wrote it; the stand-in asked it to remember the
    # cat, which it embeds (through tianma) and keeps
    assert review["messages"] in [b["messages"] for b in owui.chat_bodies()]
    owui.wait_for(lambda: _embedded(owui, REMEMBERED), "Open WebUI to keep the reviewed memory")
    cat = new[0]

    owui.send(TOY)
    owui.expect_reply(TOY_REPLY)
    toy = owui.wait_for(lambda: next((e for e in owui.events() if e.content == TOY and e.reply), None),
                "the next turn's event")  # fmt: skip
    # Open WebUI put its memory into the system prompt it sent tianma ...
    (asked,) = [b for b in sent.bodies if _last(b) == TOY]
    system = asked["messages"][0]
    assert system["role"] == "system" and "<memory_context>" in system["content"]
    assert REMEMBERED in system["content"]
    # ... tianma took it out (its own memory of the cat is there instead) and recorded the question
    (to_model,) = [b for b in owui.chat_bodies() if _last(b) == TOY]
    assert "<memory_context>" not in json.dumps(to_model["messages"], ensure_ascii=False)
    assert REMEMBERED not in json.dumps(to_model["messages"], ensure_ascii=False)
    assert CAT in to_model["messages"][0]["content"]
    assert (toy.content, toy.reply) == (TOY, TOY_REPLY)
    assert {e.id for e in owui.events()} == before | {cat.id, toy.id}
    owui.shot("context-memory-next-turn")
    # that turn was reviewed too (Open WebUI's memory in the review's prompt): passed through, and
    # nothing of any review, nor of Open WebUI's memory, is in tianma
    owui.wait_for(lambda: any(f"user: {TOY}" in _last(b) and REMEMBERED in _last(b) for b in _reviews(owui)),
          "the review of the next turn")  # fmt: skip
    assert [t.response_headers["x-tianma-event-id"] for t in owui.recorder.turns(chat)] == [cat.id, toy.id]
    assert {e.id for e in owui.events()} == before | {cat.id, toy.id}
    assert _kept(owui, REMEMBERED) == [] and _kept(owui, "<memory_context>") == []
    assert _kept(owui, "Review the completed conversation turn") == []


PASTED = "### Task: 帮我看看这段提示词写得怎么样"
"""A user's own message in the shape of Open WebUI's task prompts."""
PASTED_REPLY = "写得挺清楚的。"


def test_with_the_task_header_open_webui_names_its_tasks_and_a_task_shaped_message_is_a_turn(
    owui: OpenWebUI, sent: BodyTap
) -> None:
    owui.script.replies[PASTED] = [PASTED_REPLY]
    config = owui.api("GET", "/ollama/config")  # Admin Panel → Settings → Connections → Ollama → Headers
    configs = dict(config.get("OLLAMA_API_CONFIGS") or {})
    configs["0"] = {**configs.get("0", {}), "headers": {"X-Tianma-Task": "{{TASK}}"}}
    owui.api("POST", "/ollama/config/update", {"ENABLE_OLLAMA_API": True, "OLLAMA_BASE_URLS": config["OLLAMA_BASE_URLS"],
                                              "OLLAMA_API_CONFIGS": configs})  # fmt: skip
    before = {e.id for e in owui.events()}
    seen = len(owui.recorder.exchanges)
    owui.new_chat(MODEL)
    chat = owui.send(PASTED)
    owui.expect_reply(PASTED_REPLY)
    event = owui.wait_for(lambda: next((e for e in owui.events() if e.content == PASTED and e.reply), None),
                          "the task-shaped message's event")  # fmt: skip
    owui.wait_for(lambda: any(task_kind(b) == "title" and PASTED in _last(b) for b in owui.chat_bodies()),
                  "Open WebUI's title task for it")  # fmt: skip
    owui.shot("context-task-header")
    chats = [e for e in owui.recorder.exchanges[seen:] if e.path == "/api/chat"]
    named = {e.headers.get("x-tianma-task") for e in chats}
    assert "" in named and "title_generation" in named  # Open WebUI filled {{TASK}} in
    (turn,) = owui.recorder.turns(chat)
    assert turn.headers["x-tianma-task"] == "" and turn.response_headers["x-tianma-event-id"] == event.id
    assert {e.id for e in owui.events()} - before == {event.id}  # the tasks it named were passed through
    assert all("x-tianma-event-id" not in e.response_headers for e in chats if e.headers.get("x-tianma-task"))
