"""Open WebUI as it talks (read from its 0.12 source): memory reviews, RAG-wrapped messages,
its own memory block, its chat and user headers."""

from __future__ import annotations

import time

import httpx

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma.serve.openwebui import is_background_task, user_query, without_memory_context

REVIEW_SYSTEM = "You are Open WebUI's private memory reviewer. Return only valid JSON."
REVIEW = (
    "Review the completed conversation turn and decide whether long-term memory should change.\n\n"
    "Memory types:\n- user: durable facts…\n\nConversation:\nuser: 我家猫叫年糕\n"
)
RAG = (
    "### Task:\nRespond to the user query using the provided context, incorporating inline citations…\n\n"
    "<context>\n<source id=\"1\">The router manual says hold reset for 10 s.</source>\n</context>\n\n"
    "<user_query>\n我不吃香菜。这份说明书里路由器怎么重置？\n</user_query>\n"
)

RAG_012 = (  # what 0.12.4 sends: its template, the documents, the file list, then the user's message
    "### Task:\nRespond to the user query using the provided context, incorporating inline citations…\n\n"
    "<context>\n<source id=\"1\" name=\"manual.txt\" resource-type=\"file\">Hold reset for 10 s.</source>\n"
    "</context>\n\n<attached_files>\n<file type=\"file\" id=\"f1\" name=\"manual.txt\"/>\n</attached_files>\n\n"
    "这份说明书里路由器怎么重置？"
)


def _chat(url: str, messages: list[dict[str, str]], **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/api/chat", json={"model": MODEL, "stream": False, "messages": messages},
                      headers=headers, timeout=60)  # fmt: skip


def test_the_memory_review_is_passed_through_and_never_recorded(serve: ServeFactory) -> None:
    s = serve()
    r = _chat(s.url, [{"role": "system", "content": REVIEW_SYSTEM}, {"role": "user", "content": REVIEW}])
    assert r.status_code == 200
    assert s.runtime.memories("me", "event") == []
    assert "【" not in str(s.chat_bodies()[-1]["messages"])  # no memory block added either


def test_a_message_with_a_file_is_a_turn_whose_text_is_the_users_query(serve: ServeFactory) -> None:
    s = serve()
    r = _chat(s.url, [{"role": "user", "content": RAG}])
    assert r.status_code == 200
    (event,) = s.runtime.memories("me", "event")
    assert event.content == "我不吃香菜。这份说明书里路由器怎么重置？"  # the documents are not memory
    sent = str(s.chat_bodies()[-1]["messages"])
    assert "hold reset for 10 s" in sent  # the model still reads the documents


def test_the_task_open_webui_names_in_its_custom_header_decides(serve: ServeFactory) -> None:
    # Open WebUI's connection with the custom header X-Tianma-Task: {{TASK}}
    s = serve()
    tasked = {"X-Tianma-Task": "title_generation"}
    assert _chat(s.url, [{"role": "user", "content": "总结一下这段对话的标题"}], **tasked).status_code == 200
    assert s.runtime.memories("me", "event") == []  # named a task: passed through, whatever it says
    pasted = "### Task: 帮我看看这段提示词写得怎么样"  # the user's own message, in a task's shape
    assert _chat(s.url, [{"role": "user", "content": pasted}], **{"X-Tianma-Task": ""}).status_code == 200
    assert _chat(s.url, [{"role": "user", "content": RAG_012}], **{"X-Tianma-Task": ""}).status_code == 200
    events = sorted(e.content for e in s.runtime.memories("me", "event"))
    assert events == sorted([pasted, "这份说明书里路由器怎么重置？"])
    _chat(s.url, [{"role": "user", "content": pasted}])  # without the header: the prefix decides
    assert len(s.runtime.memories("me", "event")) == 2


def test_open_webuis_memory_block_is_removed_from_the_prompt(serve: ServeFactory) -> None:
    s = serve()
    system = "You are helpful.\n\n<memory_context>\n1. [2026-11-01] User likes cats\n</memory_context>"
    _chat(s.url, [{"role": "system", "content": system}, {"role": "user", "content": "推荐一部电影"}])
    sent = s.chat_bodies()[-1]["messages"]
    assert "memory_context" not in str(sent) and "User likes cats" not in str(sent)
    assert "You are helpful." in str(sent)


TITLE_TASK = "### Task:\nGenerate a concise title…\n<chat_history>\nUSER: 记住，我家wifi密码是 Qz7#kLm29x\n</chat_history>"


def test_a_background_task_goes_on_without_the_chats_secrets_and_a_tool_round_unchanged(serve: ServeFactory) -> None:
    s = serve()
    assert _chat(s.url, [{"role": "user", "content": TITLE_TASK}]).status_code == 200
    titled = str(s.chat_bodies()[-1]["messages"])
    assert "Qz7#kLm29x" not in titled and "Generate a concise title" in titled and "wifi" in titled
    httpx.post(f"{s.url}/v1/chat/completions", timeout=60, json={"model": MODEL, "messages": [
        {"role": "user", "content": [{"type": "text", "text": TITLE_TASK}]}]})  # fmt: skip
    (sent,) = s.standin.requests_to("/v1/chat/completions")  # (the stand-in only records it: 404)
    forwarded = sent.body or {}
    assert "Qz7#kLm29x" not in str(forwarded) and "Generate a concise title" in str(forwarded)
    tool = [{"role": "user", "content": "查一下路由器"}, {"role": "tool", "content": "token=Qz7#kLm29x"}]
    assert _chat(s.url, tool).status_code == 200  # not a task: the model's tool round is its own business
    assert s.chat_bodies()[-1]["messages"] == tool
    assert s.runtime.memories("me", "event") == []


def test_the_chat_id_header_keeps_one_dialogue_across_a_stop_and_a_restart(serve: ServeFactory) -> None:
    s = serve()
    a = _chat(s.url, [{"role": "user", "content": "第一句"}], **{"X-OpenWebUI-Chat-Id": "chat-1"})
    # an edited history (as after a stop) would look like a new dialogue without the header
    b = _chat(s.url, [{"role": "user", "content": "完全不同的历史"}, {"role": "assistant", "content": "…"},
                      {"role": "user", "content": "第二句"}], **{"X-OpenWebUI-Chat-Id": "chat-1"})  # fmt: skip
    assert a.headers["X-Tianma-Dialogue-Id"] == b.headers["X-Tianma-Dialogue-Id"]


def test_the_open_webui_user_header_counts_only_when_trusted(serve: ServeFactory) -> None:
    trusted = serve(serve={"trust_openwebui_user": True})
    _chat(trusted.url, [{"role": "user", "content": "我不吃香菜"}], **{"X-OpenWebUI-User-Id": "u-alice"})
    _chat(trusted.url, [{"role": "user", "content": "我对花生过敏"}], **{"X-OpenWebUI-User-Id": "u-bob"})
    assert [e.content for e in trusted.runtime.memories("u-alice", "event")] == ["我不吃香菜"]
    assert [e.content for e in trusted.runtime.memories("u-bob", "event")] == ["我对花生过敏"]
    untrusted = serve(name="untrusted")
    _chat(untrusted.url, [{"role": "user", "content": "我不吃香菜"}], **{"X-OpenWebUI-User-Id": "u-alice"})
    assert untrusted.runtime.memories("u-alice", "event") == [] and untrusted.runtime.memories("me", "event")


def test_rules_on_their_own() -> None:
    assert user_query("### Task:\nGenerate a title\n<chat_history>…") is None
    assert is_background_task([{"role": "user", "content": "### Task:\nGenerate 1-3 broad tags"}], ["### Task:"])
    assert not is_background_task([{"role": "user", "content": RAG}], ["### Task:"])
    assert user_query(RAG_012) == "这份说明书里路由器怎么重置？"
    assert not is_background_task([{"role": "user", "content": RAG_012}], ["### Task:"])
    assert user_query("<attached_files>\n<file name=\"a.txt\"/>\n</attached_files>\n\nsummarise it") == "summarise it"
    assert user_query("### Task:\nSuggest 3-5 follow-up questions\n<chat_history>\nUSER: <context>x</context>") is None
    assert not is_background_task([{"role": "user", "content": "Review my essay please"}], ["### Task:"])
    kept = without_memory_context([{"role": "user", "content": "<memory_context>x</memory_context>"}])
    assert kept[0]["content"] == "<memory_context>x</memory_context>"  # only system prompts are the client's


def test_crafted_bodies_are_read_in_linear_time() -> None:
    # Not a speed measurement: a regex search restarting at every opening tag took minutes here.
    bodies = ["### Task:\n" + "<user_query>" * 300_000, "### Task:\n<context>" + "</context>" * 300_000]
    start = time.perf_counter()
    for body in bodies:
        user_query(body)
    without_memory_context([{"role": "system", "content": "<memory_context>" * 300_000 + " " * 1_000_000}])
    assert time.perf_counter() - start < 10
    two = "A <memory_context>x</memory_context> B <memory_context>y"
    assert without_memory_context([{"role": "system", "content": two}])[0]["content"] == "A\nB <memory_context>y"
