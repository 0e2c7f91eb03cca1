"""``POST /tianma/feedback/openwebui``: an Open WebUI rating, sent by tianma's Event Function, lands on
the turn it rated — found by the chat id, the rated reply and the user's message."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.unit.serve.conftest import MODEL, Served, ServeFactory
from tianma.errors import BadRequestError
from tianma.serve.openwebui_feedback import parse_rating
from tianma.storage.records import MemoryRecord

PATH = "/tianma/feedback/openwebui"
KEYS = {"api_keys": {"key-alice": "alice", "key-bob": "bob"}, "admin_keys": ["key-admin"]}


def _chat(s: Served, text: str, chat: str = "chat-1", history: list[dict[str, str]] | None = None,
          headers: dict[str, str] | None = None) -> httpx.Response:  # fmt: skip
    """One turn as Open WebUI sends it (its chat id in ``X-OpenWebUI-Chat-Id``)."""
    messages = [*(history or []), {"role": "user", "content": text}]
    answer = httpx.post(f"{s.url}/api/chat", json={"model": MODEL, "stream": False, "messages": messages},
                        headers={"X-OpenWebUI-Chat-Id": chat, **(headers or {})}, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    return answer


def _rating(reply: str, user_text: str, rating: int = -1, chat: str = "chat-1", **fields: Any) -> dict[str, Any]:
    body = {"feedback_id": "fb-1", "user_id": "owui-user-1", "chat_id": chat, "message_id": "msg-2",
            "rating": rating, "reason": None, "comment": None, "reply": reply, "user_text": user_text}  # fmt: skip
    return {**body, **fields}


def _rate(s: Served, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{s.url}{PATH}", json=body, headers=headers or {}, timeout=30)


def _signals(s: Served, user: str = "me") -> list[MemoryRecord]:
    signals: list[MemoryRecord] = s.runtime.memories(user, "signal")
    return signals


def test_the_rated_reply_finds_its_turn_in_the_chat(serve: ServeFactory) -> None:
    s = serve()
    first = _chat(s, "讲个笑话").headers["x-tianma-event-id"]
    history = [{"role": "user", "content": "讲个笑话"}, {"role": "assistant", "content": "你说：讲个笑话"}]
    second = _chat(s, "再讲一个", history=history).headers["x-tianma-event-id"]
    _chat(s, "讲个笑话", chat="chat-2")  # the same words in another chat: not this one
    r = _rate(s, _rating("你说：讲个笑话", "讲个笑话"))
    assert r.status_code == 200, r.text
    assert r.json() | {"signal_id": None} == {"status": "recorded", "signal_id": None, "event_id": first,
                                              "kind": "dislike", "matched": "reply"}  # fmt: skip
    (signal,) = _signals(s)
    assert signal.id == r.json()["signal_id"] and signal.data["target_event_id"] == first != second
    assert signal.data["openwebui"]["feedback_id"] == "fb-1" and signal.data["openwebui"]["user_id"] == "owui-user-1"
    assert signal.content == signal.data["detail"] == "explicit dislike in Open WebUI"


def test_a_reply_no_longer_the_turns_is_matched_by_the_users_message(serve: ServeFactory) -> None:
    """Open WebUI keeps the reply a regenerate threw away, and a 👍 on it still names its turn."""
    s = serve()
    event = _chat(s, "推荐一本书").headers["x-tianma-event-id"]
    r = _rate(s, _rating("推荐《宇宙》。（已被重新生成替换）", "推荐一本书", rating=1, comment="很好"))
    assert r.status_code == 200
    assert (r.json()["event_id"], r.json()["kind"], r.json()["matched"]) == (event, "like", "message")
    (signal,) = _signals(s)
    assert (signal.data["type"], signal.content) == ("like", "很好")


def test_a_message_with_a_secret_matches_as_tianma_stored_it(serve: ServeFactory) -> None:
    s = serve()
    text = "我家的wifi密码就是 88886666，帮我记一下怎么连"
    answer = _chat(s, text)
    shown = answer.json()["message"]["content"]  # with tianma's notice about the secret
    assert "88886666" not in shown
    r = _rate(s, _rating(shown, text))
    assert r.status_code == 200 and r.json()["event_id"] == answer.headers["x-tianma-event-id"]


def test_no_matching_turn_is_404_and_records_nothing(serve: ServeFactory) -> None:
    s = serve()
    _chat(s, "讲个笑话")
    for body in (_rating("别的回答", "别的问题"), _rating("你说：讲个笑话", "讲个笑话", chat="another-chat")):
        r = _rate(s, body)
        assert r.status_code == 404 and "no turn of Open WebUI chat" in r.json()["error"]
    assert _signals(s) == []


@pytest.mark.parametrize(
    "change",
    [
        {"rating": 2}, {"rating": 0}, {"rating": True}, {"rating": "-1"}, {"rating": None},
        {"chat_id": 5}, {"chat_id": ""}, {"feedback_id": None}, {"message_id": ["m"]}, {"user_id": 1},
        {"reply": None}, {"user_text": ""}, {"user_text": 3}, {"comment": 3}, {"reason": {"r": 1}},
        {"feedback_id": "x" * 201},
    ],
    ids=lambda change: ",".join(f"{k}={str(v)[:8]}" for k, v in change.items()),
)
def test_a_field_of_the_wrong_type_is_refused(change: dict[str, Any]) -> None:
    with pytest.raises(BadRequestError):
        parse_rating({**_rating("你说：讲个笑话", "讲个笑话"), **change})


def test_a_bad_body_is_400_and_records_nothing(serve: ServeFactory) -> None:
    s = serve()
    _chat(s, "讲个笑话")
    without = {k: v for k, v in _rating("你说：讲个笑话", "讲个笑话").items() if k != "user_text"}
    for body in (["not", "an", "object"], without, {**_rating("你说：讲个笑话", "讲个笑话"), "rating": "-1"},
                 {**_rating("你说：讲个笑话", "讲个笑话"), "chat_id": 7}):  # fmt: skip
        r = _rate(s, body)
        assert r.status_code == 400 and r.json()["error"], body
    assert _signals(s) == []


def test_the_same_feedback_reported_again_counts_once(serve: ServeFactory) -> None:
    """Open WebUI reports one 👎 when given, when tagged and with its comment; then the user
    changes it to 👍: one signal, the comment its words, the change noted and not counted."""
    s = serve()
    event = _chat(s, "讲个笑话").headers["x-tianma-event-id"]
    given = _rate(s, _rating("你说：讲个笑话", "讲个笑话"))
    tagged = _rate(s, _rating("你说：讲个笑话", "讲个笑话"))
    commented = _rate(s, _rating("你说：讲个笑话", "讲个笑话", reason="not_helpful", comment="一点也不好笑"))
    changed = _rate(s, _rating("你说：讲个笑话", "讲个笑话", rating=1, comment="一点也不好笑"))
    assert [r.json()["status"] for r in (given, tagged, commented, changed)] == ["recorded", "unchanged", "updated", "kept"]
    assert {r.json()["signal_id"] for r in (given, tagged, commented, changed)} == {given.json()["signal_id"]}
    (signal,) = _signals(s)
    assert signal.data["target_event_id"] == event
    assert (signal.data["type"], signal.content) == ("correction", "一点也不好笑")  # a 👎 with words
    assert signal.data["detail"] == "explicit correction in Open WebUI (not_helpful)"
    assert signal.data["openwebui"]["rating"] == -1 and signal.data["openwebui"]["rating_now"] == 1
    another = _rate(s, _rating("你说：讲个笑话", "讲个笑话", rating=1, feedback_id="fb-2"))
    assert another.json()["status"] == "recorded" and len(_signals(s)) == 2  # another rating: its own signal


def test_reports_arriving_together_make_one_signal(serve: ServeFactory) -> None:
    s = serve()
    _chat(s, "讲个笑话")
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: _rate(s, _rating("你说：讲个笑话", "讲个笑话")), range(4)))
    assert sorted(r.json()["status"] for r in answers) == ["recorded", "unchanged", "unchanged", "unchanged"]
    assert len(_signals(s)) == 1


def test_another_users_chat_is_not_matched(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    alice = {"X-API-Key": "key-alice"}
    event = _chat(s, "讲个笑话", headers=alice).headers["x-tianma-event-id"]
    as_bob = _rate(s, _rating("你说：讲个笑话", "讲个笑话"), headers={"X-API-Key": "key-bob"})
    assert as_bob.status_code == 404 and _signals(s, "alice") == [] and _signals(s, "bob") == []
    assert _rate(s, _rating("你说：讲个笑话", "讲个笑话")).status_code == 401  # keys required
    as_alice = _rate(s, _rating("你说：讲个笑话", "讲个笑话"), headers=alice)
    assert as_alice.status_code == 200 and as_alice.json()["event_id"] == event


def test_the_forwarded_open_webui_user_is_taken_as_for_chats(serve: ServeFactory) -> None:
    """Trusted (admin key, ``serve.trust_openwebui_user``): the user Open WebUI names owns the chat,
    and a rating sent with another user's headers finds nothing."""
    s = serve(serve={**KEYS, "trust_openwebui_user": True})
    admin = {"X-API-Key": "key-admin"}
    event = _chat(s, "讲个笑话", headers={**admin, "X-OpenWebUI-User-Id": "u-1"}).headers["x-tianma-event-id"]
    other = _rate(s, _rating("你说：讲个笑话", "讲个笑话"), headers={**admin, "X-OpenWebUI-User-Id": "u-2"})
    assert other.status_code == 404
    owner = _rate(s, _rating("你说：讲个笑话", "讲个笑话"), headers={**admin, "X-OpenWebUI-User-Id": "u-1"})
    assert owner.status_code == 200 and owner.json()["event_id"] == event
    assert [x.data["target_event_id"] for x in _signals(s, "u-1")] == [event]
