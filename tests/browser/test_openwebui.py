"""Tested against the real thing (issue #13): the real Open WebUI 0.12.4 in headless Chromium, with
``tianma serve`` as its Ollama and the Ollama stand-in behind tianma. A user signs up, tells it
about an allergy, asks for dinner in a new chat, stops a long answer, regenerates one, and gives a
reply 👎 with a comment through tianma's Event Function.

One Open WebUI serves the whole module and its tests run in order: the first signs up. Open
WebUI's settings are tests/browser/openwebui.py's ``OPENWEBUI_ENV`` (also in the README).
"""

from __future__ import annotations

import json
import time
from datetime import UTC
from pathlib import Path

import httpx
from typer.testing import CliRunner

from tests.browser.openwebui import TITLE_MARK, OpenWebUI, task_kind, wait_for
from tests.fakes import ScriptedChatModel
from tianma import Runtime, Settings
from tianma.cli.app import app
from tianma.cli.connection import DirectConnection
from tianma.cli.importing import run_import
from tianma.cli.openwebui import function_source
from tianma.importing.formats import read_export
from tianma.operations.homes import ServedHome
from tianma.serve.openwebui_feedback import PATH as FEEDBACK_PATH
from tianma.storage.protocols import Embedder
from tianma.storage.records import MemoryRecord

MODEL = "qwen2.5:7b"  # one of the stand-in's installed models
USER = "me"
"""tianma's keyless default user: ``serve.trust_openwebui_user`` is off, so Open WebUI's
``X-OpenWebUI-User-Id`` is not taken."""
ALLERGY = "我对花生过敏，做菜千万不要放花生"
DINNER = "推荐一道晚饭菜"
LONG = "".join(f"第{i}步：把第{i}样蔬菜洗净切好，下锅翻炒。" for i in range(1, 60))
"""~900 streamed pieces: ~45 s at 0.05 s a piece, far longer than the test waits."""


def test_a_message_is_one_event_and_the_background_tasks_are_not(owui: OpenWebUI) -> None:
    owui.script.replies[ALLERGY] = ["好的，我记住了：你对花生过敏，做菜不放花生。"]
    owui.sign_up("小林", "xiaolin@example.com", "tianma-test-password")
    owui.new_chat(MODEL)
    chat = owui.send(ALLERGY)
    owui.expect_reply("好的，我记住了")
    event = wait_for(lambda: next((e for e in owui.events() if e.reply), None), what="the turn's event")
    # Open WebUI's title, tags and follow-ups (its "### Task:" prompts) all go through tianma
    wait_for(lambda: {"title", "tags", "follow_ups"} <= {task_kind(b) for b in owui.chat_bodies()},
             what="Open WebUI's background tasks")  # fmt: skip
    owui.expect_title(ALLERGY[:6] + TITLE_MARK)  # the title task's answer came back through tianma
    owui.shot("allergy")
    # one event: the tasks were passed through, not recorded
    assert [e.id for e in owui.events()] == [event.id]
    assert (event.content, event.reply) == (ALLERGY, "好的，我记住了：你对花生过敏，做菜不放花生。")
    tasks = [b for b in owui.chat_bodies() if task_kind(b) is not None]
    assert len(tasks) >= 3 and all(ALLERGY in b["messages"][-1]["content"] for b in tasks)
    (turn,) = owui.recorder.turns(chat)  # the one turn came with the chat's id and the user's
    assert turn.response_headers["x-tianma-event-id"] == event.id
    assert turn.response_headers["x-tianma-dialogue-id"] == event.dialogue_id
    forwarded = turn.headers["x-openwebui-user-id"]
    assert forwarded and owui.events(forwarded) == []  # not trusted: the keyless default user


def test_a_new_chat_is_a_new_dialogue_that_remembers_the_allergy(owui: OpenWebUI) -> None:
    owui.script.replies[DINNER] = ["推荐番茄炒蛋：不含花生，十分钟就好。"]
    first_chat = next(e.headers["x-openwebui-chat-id"] for e in owui.recorder.exchanges
                      if "x-tianma-event-id" in e.response_headers)  # fmt: skip
    owui.new_chat(MODEL)
    chat = owui.send(DINNER)
    owui.expect_reply("推荐番茄炒蛋")
    wait_for(lambda: len(owui.events()) == 2, what="the second chat's event")
    owui.shot("dinner")
    (body,) = owui.turn_bodies(DINNER)
    system = body["messages"][0]
    assert system["role"] == "system" and ALLERGY in system["content"]  # tianma's memory, injected
    events = {e.content: e for e in owui.events()}
    assert set(events) == {ALLERGY, DINNER}
    assert chat != first_chat and events[ALLERGY].dialogue_id != events[DINNER].dialogue_id
    (turn,) = owui.recorder.turns(chat)
    assert turn.response_headers["x-tianma-dialogue-id"] == events[DINNER].dialogue_id


def test_the_stop_button_abandons_the_answer_and_the_turn_keeps_what_was_shown(owui: OpenWebUI) -> None:
    question = "教我做一道素炒什锦"
    owui.script.replies[question] = [LONG]
    owui.standin.piece_delay = 0.05
    cut = len(owui.standin.cut_off)
    try:
        owui.new_chat(MODEL)
        owui.send(question)
        owui.expect_reply("第2步")  # tianma releases it a sentence at a time: it is streaming
        owui.shot("stop-streaming")
        owui.page.get_by_role("button", name="Stop").click()
        stopped = time.monotonic()
        wait_for(
            lambda: len(owui.standin.cut_off) > cut, timeout_s=10, what="the stand-in's answer to be cut off"
        )
        assert time.monotonic() - stopped < 5
        assert owui.standin.cut_off[cut:] == ["/api/chat"]
    finally:
        owui.standin.piece_delay = 0.0
    owui.shot("stopped")
    event = wait_for(lambda: next((e for e in owui.events() if e.content == question and e.reply), None),
                     what="the stopped turn's reply")  # fmt: skip
    assert event.reply and LONG.startswith(event.reply) and len(event.reply) < len(LONG) // 2
    signal = wait_for(lambda: next((s for s in owui.runtime.memories(USER, "signal")
                                    if s.data.get("target_event_id") == event.id), None), what="a signal")  # fmt: skip
    assert signal.data.get("type") == "impatience"


def test_regenerate_replaces_the_reply_of_the_same_event(owui: OpenWebUI) -> None:
    question = "推荐一本关于天文的书"
    owui.script.replies[question] = ["推荐《宇宙》。", "推荐《时间简史》。"]
    owui.new_chat(MODEL)
    chat = owui.send(question)
    owui.expect_reply("推荐《宇宙》。")
    before = wait_for(lambda: next((e for e in owui.events() if e.reply == "推荐《宇宙》。"), None),
                      what="the first reply")  # fmt: skip
    owui.page.get_by_role("button", name="Regenerate").last.click()
    owui.shot("regenerate-menu")
    owui.page.get_by_role("button", name="Try Again").click()
    owui.expect_reply("推荐《时间简史》。")
    owui.shot("regenerated")
    assert len(owui.turn_bodies(question)) == 2  # the stand-in answered twice
    event = wait_for(lambda: next((e for e in owui.events() if e.content == question
                                   and e.reply == "推荐《时间简史》。"), None), what="the new reply")  # fmt: skip
    assert [e.id for e in owui.events() if e.content == question] == [before.id] == [event.id]
    turns = owui.recorder.turns(chat)
    assert [t.response_headers["x-tianma-event-id"] for t in turns] == [event.id, event.id]
    regenerated = [s for s in owui.runtime.memories(USER, "signal") if s.data.get("type") == "regenerate"]
    assert [s.data.get("target_event_id") for s in regenerated] == [event.id]


def _feedback_on(owui: OpenWebUI, event_id: str) -> list[MemoryRecord]:
    return [s for s in owui.runtime.memories(USER, "signal") if s.data.get("target_event_id") == event_id
            and s.data.get("type") in ("like", "dislike", "correction")]  # fmt: skip


def test_thumbs_down_and_its_comment_reach_tianma_as_feedback_on_the_turn(owui: OpenWebUI) -> None:
    """Open WebUI's own 👎 and comment, through tianma's Event Function (``tianma openwebui
    function``) installed by the admin: nothing else tells tianma of a rating, so without it this fails."""
    question, comment = "讲个冷笑话", "一点也不好笑，换个短一点的"
    owui.script.replies[question] = ["企鹅为什么不怕冷？因为它有企鹅绒。"]
    function = owui.install_function("tianma_feedback", "tianma feedback", function_source())
    assert (function["type"], function["is_active"]) == ("event", True)
    owui.new_chat(MODEL)
    chat = owui.send(question)
    owui.expect_reply("企鹅绒")
    event = wait_for(lambda: next((e for e in owui.events() if e.content == question and e.reply), None),
                     what="the turn's event")  # fmt: skip
    owui.page.get_by_role("button", name="Bad Response").last.click()
    (disliked,) = owui.wait_for(lambda: _feedback_on(owui, event.id), what="tianma's dislike on the turn")
    assert disliked.data["type"] == "dislike" and disliked.data["openwebui"]["chat_id"] == chat
    form = owui.page.locator('[id^="message-feedback-"]')  # Open WebUI asks what was wrong
    form.get_by_label("Additional feedback comments").fill(comment)
    owui.shot("thumbs-down")
    form.get_by_role("button", name="Save").click()
    owui.wait_for(lambda: [s.content for s in _feedback_on(owui, event.id)] == [comment], what="the comment in tianma")
    owui.shot("thumbs-down-saved")
    (signal,) = _feedback_on(owui, event.id)  # given, tagged, commented: one signal
    assert (signal.id, signal.data["type"], signal.data["openwebui"]["rating"]) == (disliked.id, "correction", -1)
    posts = [e for e in owui.recorder.exchanges if e.path == FEEDBACK_PATH]
    assert len(posts) >= 2 and {e.status for e in posts} == {200}  # created, then updated (tags, comment)
    assert {e.headers.get("x-openwebui-chat-id") for e in posts} == {chat}  # Open WebUI's own headers


def test_its_chat_exports_import_as_the_chats_it_shows(owui: OpenWebUI, tmp_path: Path, e5: Embedder) -> None:
    """What "Export All Chats" (``GET /api/v1/chats/all``) and a chat's "Export chat (.json)"
    (``GET /api/v1/chats/<id>``, written as a one-item list) write, imported into a new home:
    the user's messages with the branch Open WebUI shows (the regenerated reply, not the first);
    imported beside the live home, every message is found already recorded."""
    # Export All Chats: the page reads GET /api/v1/chats/all (NDJSON, a chat a line) into a list
    # and saves JSON.stringify(list) — DataControls.svelte's exportChats
    token = owui.page.evaluate("() => localStorage.token")
    answer = httpx.get(owui.url + "/api/v1/chats/all", timeout=60,
                       headers={"Authorization": f"Bearer {token}", "Accept": "application/x-ndjson"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    every = [json.loads(line) for line in answer.text.splitlines() if line.strip()]
    assert len(every) >= 4
    ndjson = tmp_path / "chats.ndjson"  # the stream itself, as a script saving it would
    ndjson.write_text(answer.text, encoding="utf-8")
    exported = tmp_path / "chat-export-all.json"
    exported.write_text(json.dumps(every, ensure_ascii=False), encoding="utf-8")
    regenerated = next(c for c in every if "推荐一本关于天文的书" in json.dumps(c, ensure_ascii=False))
    one = tmp_path / "chat-export-one.json"
    one.write_text(json.dumps([owui.api("GET", f"/api/v1/chats/{regenerated['id']}")], ensure_ascii=False),
                   encoding="utf-8")  # fmt: skip

    home = tmp_path / "moved"
    done = CliRunner(env={"TIANMA_EMBEDDER__THREADS": "1"}).invoke(
        app, ["import", str(exported), "--home", str(home), "-u", "me"]
    )
    assert done.exit_code == 0, done.output
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel(replies=["好"]), embedder=e5) as rt:
        moved = {e.content: e for e in rt.memories("me", "event")}
    live = {e.content: e for e in owui.events()}
    assert set(moved) == set(live)  # every message the user sent, and only those
    assert moved["推荐一本关于天文的书"].reply == "推荐《时间简史》。"  # the branch Open WebUI shows
    assert moved[ALLERGY].reply == live[ALLERGY].reply
    assert moved[ALLERGY].at is not None and live[ALLERGY].at is not None
    assert abs((moved[ALLERGY].at - live[ALLERGY].at).total_seconds()) < 5  # Open WebUI's own times

    streamed = read_export(ndjson, "auto", UTC)
    assert streamed.format == "openwebui"
    assert streamed.messages == read_export(exported, "auto", UTC).messages
    parsed = read_export(one, "auto", UTC)
    assert [m.text for m in parsed.messages if m.role == "user"] == ["推荐一本关于天文的书"]
    report = run_import(DirectConnection(ServedHome(owui.runtime)), USER, read_export(exported, "auto", UTC),
                        "live-home", UTC)  # fmt: skip
    assert report.stored.added == 0 and report.stored.live == len(live)  # recorded live already: not again
