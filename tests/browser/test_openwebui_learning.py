"""Issue #12 on the product path: the real Open WebUI 0.12.4 in headless Chromium, ``tianma serve``
behind it, the Ollama stand-in behind tianma, and a learning model that answers nothing usable
(the runtime's ``ScriptedChatModel`` says "好的。" to every reflection), so only the rule path learns.

A user types a password into the chat: the reply shown says tianma keeps no secrets, and no file
of tianma's home ever holds it — not after Open WebUI's title, tags and follow-ups, not after the
next message sends it back as history. Then the user states a wish in one chat, repeats it in
another, takes it back in a third; the night's reflection runs between them (as ``serve``'s
scheduler would); the question in a fourth chat carries the new wish and not the old one.

Its own Open WebUI (the ``owui`` fixture is per module); the tests run in order, the first signs up.
"""

from __future__ import annotations

from tests.browser.openwebui import OpenWebUI, task_kind
from tests.home_scan import files_holding
from tianma.guardrails.secrets import NOTICE_ZH

MODEL = "qwen2.5:7b"
USER = "me"
"""tianma's keyless default user (Open WebUI's forwarded user is not trusted)."""
PASSWORD = "Qz7#kLm29x"
SECRET = f"记住，我家wifi密码是 {PASSWORD}"
AFTER = "路由器后台一般怎么登录？"
WISH = "以后回答我的问题请先给结论，再讲细节。"
AGAIN = "我再说一次：以后请先给结论再讲细节。"
CHANGE = "不对，以后不用先给结论了，直接按步骤讲就行。"
QUESTION = "解释一下怎么配置路由器。"


def _said(owui: OpenWebUI, text: str) -> None:
    """``text`` sent in a new chat, its reply shown and its turn recorded."""
    owui.new_chat(MODEL)
    owui.send(text)
    owui.expect_reply("好的")
    owui.wait_for(lambda: any(e.content == text and e.reply for e in owui.events()), what=f"the event of {text!r}")


def test_a_password_typed_into_open_webui_is_never_kept_and_the_reply_says_so(owui: OpenWebUI) -> None:
    owui.sign_up("小林", "xiaolin@example.com", "tianma-test-password")
    owui.new_chat(MODEL)
    owui.send(SECRET)
    owui.expect_reply(NOTICE_ZH[:12])  # the reply shown ends with the notice, in the user's language
    owui.wait_for(lambda: {"title", "tags", "follow_ups"} <= {task_kind(b) for b in owui.chat_bodies()},
                  what="Open WebUI's background tasks")  # fmt: skip
    owui.send(AFTER)  # the same chat: Open WebUI sends the secret again, as history
    owui.expect_reply("好的")
    event = owui.wait_for(lambda: next((e for e in owui.events() if e.content == AFTER and e.reply), None),
                          what="the second turn's event")  # fmt: skip
    owui.shot("secret")

    (stored,) = [e for e in owui.events() if e.id != event.id]
    assert PASSWORD not in stored.content and "wifi" in stored.content
    turns = [b for b in owui.chat_bodies() if task_kind(b) is None]
    assert len(turns) == 2 and not [b for b in turns if PASSWORD in str(b)]  # nor did the model see it
    tasks = [b for b in owui.chat_bodies() if task_kind(b) is not None]
    assert tasks and not [b for b in tasks if PASSWORD in str(b)]  # nor Open WebUI's title, tags, follow-ups
    assert files_holding(owui.runtime.settings.home, PASSWORD) == []


def test_a_wish_taken_back_in_a_later_chat_is_what_the_next_question_carries(owui: OpenWebUI) -> None:
    _said(owui, WISH)
    _said(owui, AGAIN)
    owui.runtime.reflect(USER, trigger="nightly")
    _said(owui, CHANGE)
    owui.runtime.reflect(USER, trigger="nightly")
    _said(owui, QUESTION)
    owui.shot("change-of-mind")

    (body,) = owui.turn_bodies(QUESTION)
    system = body["messages"][0]
    assert system["role"] == "system"
    assert CHANGE in system["content"]  # the new wish is applied …
    assert WISH not in system["content"] and AGAIN not in system["content"]  # … the old one is not
    held = [p for p in owui.runtime.memories(USER, "preference") if p.status == "active"]
    assert not [p for p in held if "先说结论" in p.content or "先给结论，再讲" in p.content]
    assert files_holding(owui.runtime.settings.home, PASSWORD) == []  # nor did the reflections keep it
