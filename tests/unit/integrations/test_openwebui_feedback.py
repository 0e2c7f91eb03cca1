"""The Open WebUI Event Function tianma ships: what it reads from a chat, what it sends, that Open WebUI
can load it (its frontmatter, no import it rewrites) and that it never raises into Open WebUI.
Against the real Open WebUI: tests/browser/test_openwebui.py."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tianma.cli.app import app
from tianma.cli.openwebui import function_source
from tianma.integrations import openwebui_feedback as fn

CHAT = {
    "history": {
        "currentId": "a2",
        "messages": {
            "u1": {"id": "u1", "role": "user", "content": "讲个笑话", "parentId": None},
            "a1": {"id": "a1", "role": "assistant", "content": "第一个回答", "parentId": "u1"},
            "a2": {"id": "a2", "role": "assistant", "parentId": "u1", "content": [{"type": "text", "text": "重新生成的回答"}]},
        },
    }
}
FEEDBACK = {
    "id": "fb-1", "user_id": "owui-1", "type": "rating",
    "data": {"rating": -1, "reason": "not_helpful", "comment": "", "model_id": "qwen2.5:7b"},
    "meta": {"chat_id": "c-1", "message_id": "a1"},
}  # fmt: skip


def test_the_rated_reply_and_the_message_before_it() -> None:
    assert fn.rated_turn(CHAT, "a1") == ("第一个回答", "讲个笑话")
    assert fn.rated_turn(CHAT, "a2") == ("重新生成的回答", "讲个笑话")  # a regenerated sibling
    assert fn.rated_turn(CHAT, "u1") is None and fn.rated_turn(CHAT, "nope") is None
    assert fn.rated_turn({"history": {}}, "a1") is None


def test_the_report_of_a_rating() -> None:
    assert fn.report(FEEDBACK, CHAT) == {
        "feedback_id": "fb-1", "user_id": "owui-1", "chat_id": "c-1", "message_id": "a1", "rating": -1,
        "reason": "not_helpful", "comment": None, "reply": "第一个回答", "user_text": "讲个笑话",
    }  # fmt: skip
    snapshot = {**FEEDBACK, "data": {"rating": "1"}, "snapshot": {"chat": {"id": "c-1", "chat": CHAT}}}
    assert fn.report(snapshot, None)["rating"] == 1  # type: ignore[index]  # the chat it carries
    for other in ({**FEEDBACK, "type": "arena"}, {**FEEDBACK, "data": {"rating": 7}},
                  {**FEEDBACK, "meta": {"chat_id": "c-1"}}, {**FEEDBACK, "meta": {"message_id": "a1"}}):  # fmt: skip
        assert fn.report(other, CHAT) is None
    assert fn.report(FEEDBACK, None) is None  # no chat, no snapshot


def test_the_address_of_tianma() -> None:
    assert fn.endpoint("http://nas:11435/") == "http://nas:11435/tianma/feedback/openwebui"
    assert fn.endpoint("http://nas:11435/v1") == "http://nas:11435/tianma/feedback/openwebui"
    assert fn.endpoint("") == "http://127.0.0.1:11435/tianma/feedback/openwebui"


def test_open_webui_can_load_it() -> None:
    source = function_source()
    assert source == Path(fn.__file__).read_text(encoding="utf-8")
    lines = source.splitlines()
    assert lines[0] == '"""'  # Open WebUI reads the frontmatter only from a first line of exactly this
    header = lines[1 : lines.index('"""', 1)]
    keys = [m.group(1) for line in header if (m := re.match(r"^\s*([a-z_]+):\s*(.*)\s*$", line, re.I))]
    assert keys == ["title", "author", "version", "required_open_webui_version", "description"]
    for rewritten in ("from utils", "from apps", "from main", "from config"):  # its replace_imports
        assert rewritten not in source
    assert "import tianma" not in source and "from tianma" not in source  # it runs inside Open WebUI
    assert not any(hasattr(fn, name) for name in ("Pipe", "Filter", "Action"))  # so its type is "event"
    assert fn.Event.Valves().tianma_url == "" and fn.Event().valves.timeout_s == 5.0


def _run(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine on a loop of its own thread (the browser tests keep a loop in this one)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coroutine).result()


def test_it_never_raises_into_open_webui(caplog: pytest.LogCaptureFixture) -> None:
    """Here Open WebUI's modules are missing: the failure is a log line, not an exception."""
    event: dict[str, Any] = {"event": "feedback.created", "subject": {"type": "feedback", "id": "fb-1"}}
    with caplog.at_level(logging.ERROR, logger="tianma.openwebui_feedback"):
        _run(fn.Event().event(event, __request__=None, __id__="tianma_feedback"))
        _run(fn.Event().event({"event": "chat.created"}))  # not a rating: nothing at all
    assert [r.getMessage() for r in caplog.records] == ["tianma feedback: could not send Open WebUI feedback fb-1"]


def test_the_cli_prints_it() -> None:
    done = CliRunner().invoke(app, ["openwebui", "function"])
    assert done.exit_code == 0 and done.stdout == function_source()
