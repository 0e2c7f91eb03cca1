"""``POST /tianma/forget``: "forget me" deletes the caller's whole memory, only when confirmed, and
another user's only with an admin key."""

from __future__ import annotations

from typing import Any

import httpx

from tests.home_scan import files_holding
from tests.unit.serve.conftest import MODEL, Served, ServeFactory
from tianma.storage.records import Provenance

KEYS = {
    "api_keys": {"key-alice": "alice", "key-bob": "bob", "key-carol": "carol"},
    "admin_keys": ["key-admin"],
}
SECRET = {"me": "绿色乌龟", "alice": "紫色大象", "bob": "橙色长颈鹿", "carol": "蓝色海豚"}


def _headers(key: str | None) -> dict[str, str]:
    return {"X-API-Key": key} if key else {}


def _chat(s: Served, key: str | None, text: str) -> httpx.Response:
    r = httpx.post(f"{s.url}/api/chat", headers=_headers(key),
                   json={"model": MODEL, "stream": False, "messages": [{"role": "user", "content": text}]})  # fmt: skip
    assert r.status_code == 200, r.text
    return r


def _forget(s: Served, key: str | None, body: Any = None, **kwargs: Any) -> httpx.Response:
    return httpx.post(f"{s.url}/tianma/forget", headers=_headers(key), json=body, **kwargs)


def _seed(s: Served, user: str, key: str | None) -> int:
    """Two turns and an indexed fact of ``user`` naming their secret; how many records they have."""
    _chat(s, key, f"我的银行卡密码提示是{SECRET[user]}")
    _chat(s, key, "今天天气怎么样？")
    fact = s.runtime.memory.store.add_record(
        user, "fact", f"密码提示是{SECRET[user]}", Provenance(source="test")
    )
    s.runtime.memory.index([fact])
    assert [h.id for h in s.runtime.search(user, f"密码提示{SECRET[user]}", k=5)]
    return len(s.runtime.memories(user))


def test_nothing_is_deleted_unless_confirm_is_true(serve: ServeFactory) -> None:
    s = serve()  # keyless loopback: the default user "me", an admin
    before = _seed(s, "me", None)
    missing = _forget(s, None, {})
    assert (missing.status_code, missing.json()) == (400, {"error": "confirm is required"})
    false = _forget(s, None, {"confirm": False})
    assert false.status_code == 400 and false.json()["error"].startswith("confirm must be true")
    for wrong in ("true", 1, None, [True], {"yes": True}):
        r = _forget(s, None, {"confirm": wrong})
        assert r.status_code == 400 and "invalid confirm" in r.json()["error"], wrong
    assert len(s.runtime.memories("me")) == before
    done = _forget(s, None, {"confirm": True})
    assert (done.status_code, done.json()) == (200, {"user": "me", "forgotten": before})
    assert s.runtime.memories("me") == []


def test_forget_me_deletes_the_callers_memory_and_keeps_everyone_elses(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    before = _seed(s, "alice", "key-alice")
    bobs = _seed(s, "bob", "key-bob")
    r = _forget(s, "key-alice", {"confirm": True})
    assert (r.status_code, r.json()) == (200, {"user": "alice", "forgotten": before})
    assert s.runtime.memories("alice") == [] and s.runtime.search("alice", "密码提示紫色大象", k=5) == []
    assert len(s.runtime.memories("bob")) == bobs and s.runtime.search("bob", "密码提示橙色长颈鹿", k=5)
    _chat(s, "key-alice", "我的银行卡密码提示是什么？")  # memory no longer has it to inject
    assert SECRET["alice"] not in s.chat_bodies()[-1]["messages"][0]["content"]
    again = _forget(s, "key-alice", {"confirm": True})
    assert again.json() == {"user": "alice", "forgotten": 1}  # only the turn just taken


def test_only_an_admin_forgets_another_user(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    counts = {user: _seed(s, user, f"key-{user}") for user in ("alice", "bob", "carol")}
    refused = _forget(s, "key-bob", {"confirm": True, "user": "alice"})
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "only an admin key may forget another user"},
    )
    assert (
        len(s.runtime.memories("alice")) == counts["alice"]
        and len(s.runtime.memories("bob")) == counts["bob"]
    )
    by_admin = _forget(s, "key-admin", {"confirm": True, "user": "alice"})
    assert (by_admin.status_code, by_admin.json()) == (200, {"user": "alice", "forgotten": counts["alice"]})
    assert s.runtime.memories("alice") == []
    assert (
        len(s.runtime.memories("bob")) == counts["bob"]
        and len(s.runtime.memories("carol")) == counts["carol"]
    )
    own = _forget(s, "key-bob", {"confirm": True, "user": "bob"})  # naming oneself needs no admin key
    assert own.json() == {"user": "bob", "forgotten": counts["bob"]} and s.runtime.memories("bob") == []
    assert len(s.runtime.memories("carol")) == counts["carol"]


def test_malformed_bodies_are_400_and_delete_nothing(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    before = _seed(s, "alice", "key-alice")
    bodies: list[tuple[Any, str]] = [
        ({"confirm": True, "user": 5}, "invalid user: expected a string, got a number"),
        ({"confirm": True, "user": ["alice"]}, "invalid user: expected a string, got an array"),
        ({"confirm": True, "user": ""}, "invalid user"),
        ({"confirm": True, "user": "x" * 201}, "invalid user"),
        ([{"confirm": True}], "the request body must be a JSON object"),
    ]
    for body, error in bodies:
        r = _forget(s, "key-admin", body)
        assert r.status_code == 400 and r.json()["error"].startswith(error), body
    for raw in (b"", b"{not json", b'{"confirm": true, "user": "\\ud800"}'):
        assert _forget(s, "key-alice", content=raw).status_code == 400, raw
    assert len(s.runtime.memories("alice")) == before


def test_keys_are_required_and_other_sites_are_refused(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    before = _seed(s, "alice", "key-alice")
    missing = _forget(s, None, {"confirm": True})
    assert (missing.status_code, missing.json()) == (401, {"error": "unauthorized: missing API key"})
    assert _forget(s, "key-mallory", {"confirm": True, "user": "alice"}).status_code == 401
    page = {"Origin": "http://evil.example", "X-API-Key": "key-alice"}
    assert httpx.post(f"{s.url}/tianma/forget", headers=page, json={"confirm": True}).status_code == 403
    form = {"Sec-Fetch-Site": "same-origin", "X-API-Key": "key-alice"}  # a browser's form, not JSON
    assert httpx.post(f"{s.url}/tianma/forget", headers=form, data={"confirm": "true"}).status_code == 415
    assert len(s.runtime.memories("alice")) == before


def test_forget_me_while_serving_leaves_no_byte_of_the_user_in_the_home(serve: ServeFactory) -> None:
    s = serve(serve=KEYS)
    _chat(s, "key-alice", "我的猫叫 Marzipanthound，它爱吃三文鱼。")
    _chat(s, "key-alice", "Marzipanthound 今天不太舒服。")
    _chat(s, "key-bob", "我的狗叫 Quokkaberry。")
    home = s.runtime.settings.home
    assert files_holding(home, "Marzipanthound")
    done = _forget(s, "key-alice", {"confirm": True})
    assert done.status_code == 200 and done.json()["forgotten"] >= 2
    assert files_holding(home, "Marzipanthound") == []
    assert files_holding(home, "Quokkaberry")  # bob's memory is untouched
    _chat(s, "key-alice", "你好")  # the server goes on serving the forgotten user
    assert [r.content for r in s.runtime.memories("alice", kind="event")] == ["你好"]
