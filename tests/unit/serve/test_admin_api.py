"""The CLI's admin API: this run's token only, this machine only, behind the origin guard."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

from tests.conftest import RuntimeFactory
from tests.unit.serve.conftest import ServeFactory
from tianma.errors import ConfigError
from tianma.serve import create_app
from tianma.serve.admin_api import is_local_peer
from tianma.serve.serve_file import ADMIN_PATH, TOKEN_HEADER
from tianma.storage.records import MemoryRecord

TOKEN = "a-token-for-this-run-only-0123456789"
KEYS = {"api_keys": {"key-alice": "alice"}, "admin_keys": ["key-admin"]}


def _run(url: str, name: str, args: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    sent = {TOKEN_HEADER: TOKEN} if headers is None else headers
    return httpx.post(f"{url}{ADMIN_PATH}/ops/{name}", json={"args": args}, headers=sent, timeout=30)


def test_an_operation_runs_on_the_servers_runtime(serve: ServeFactory) -> None:
    s = serve(admin_token=TOKEN)
    s.runtime.ingest(
        "me",
        [{"role": "user", "text": "我喜欢爵士乐", "at": "2026-02-01T08:00:00+00:00", "dialogue_id": "d1"}],
    )
    ping = httpx.get(f"{s.url}{ADMIN_PATH}", headers={TOKEN_HEADER: TOKEN})
    assert ping.status_code == 200
    assert (
        ping.json()["home"] == str(s.runtime.settings.home.resolve())
        and "memory.forget" in ping.json()["operations"]
    )
    listed = _run(s.url, "memory.list", {"user_id": "me", "kind": "event"})
    assert listed.status_code == 200
    assert TypeAdapter(list[MemoryRecord]).validate_python(listed.json()["result"]) == s.runtime.memories(
        "me"
    )
    record_id = s.runtime.memories("me")[0].id
    forgot = _run(s.url, "memory.forget", {"user_id": "me", "record_id": record_id})
    assert forgot.json() == {"result": 1} and s.runtime.memories("me") == []
    assert s.runtime.memory.vectors.count("me") == 0


def test_errors_come_back_as_their_class_and_message(serve: ServeFactory) -> None:
    s = serve(admin_token=TOKEN)
    missing = _run(s.url, "memory.find", {"user_id": "me", "prefix": "abc"})
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {"type": "RecordNotFoundError", "message": "no record 'abc' for user me"}
    }
    bad = _run(s.url, "memory.list", {"user_id": "me", "kind": "gossip"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "InvalidInputError"
    assert _run(s.url, "memory.list", {"user": "me"}).json()["error"]["message"] == (
        "memory.list: unknown argument(s) user"
    )
    unknown = _run(s.url, "index.rebuild", {})
    assert unknown.status_code == 404 and "no operation 'index.rebuild'" in unknown.json()["error"]["message"]
    no_body = httpx.post(f"{s.url}{ADMIN_PATH}/ops/memory.list", headers={TOKEN_HEADER: TOKEN})
    assert no_body.status_code == 400


def test_only_this_runs_token_opens_it_not_a_users_or_admins_key(serve: ServeFactory) -> None:
    s = serve(admin_token=TOKEN, serve=KEYS)
    args = {"user_id": "alice"}
    assert _run(s.url, "memory.list", args).status_code == 200
    for headers in ({}, {TOKEN_HEADER: TOKEN[:-1]}, {TOKEN_HEADER: TOKEN + "x"}, {TOKEN_HEADER: "key-admin"},
                    {"Authorization": "Bearer key-alice"}, {"Authorization": "Bearer key-admin"},
                    {"X-API-Key": "key-admin"}, {"Authorization": f"Bearer {TOKEN}"}):  # fmt: skip
        refused = _run(s.url, "memory.list", args, headers)
        assert refused.status_code == 401, headers
        assert "result" not in refused.json()
        assert httpx.get(f"{s.url}{ADMIN_PATH}", headers=headers).status_code == 401
    # and the token is no API key either
    chat = httpx.post(f"{s.url}/api/chat", headers={"Authorization": f"Bearer {TOKEN}"},
                      json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    assert chat.status_code == 401


def test_behind_the_origin_guard(serve: ServeFactory) -> None:
    s = serve(admin_token=TOKEN)
    headers = {TOKEN_HEADER: TOKEN, "Origin": "http://evil.example"}
    refused = _run(s.url, "memory.list", {"user_id": "me"}, headers)
    assert refused.status_code == 403 and "origin" in refused.json()["error"]
    rebinding = httpx.get(f"{s.url}{ADMIN_PATH}", headers={TOKEN_HEADER: TOKEN, "Host": "evil.example"})
    assert rebinding.status_code == 403
    as_form = httpx.post(f"{s.url}{ADMIN_PATH}/ops/memory.list", content=b'{"args": {"user_id": "me"}}',
                         headers={TOKEN_HEADER: TOKEN, "Sec-Fetch-Site": "same-origin",
                                  "Content-Type": "text/plain"})  # fmt: skip
    assert as_form.status_code == 415


def test_without_a_token_there_is_no_admin_api(serve: ServeFactory) -> None:
    s = serve()
    assert (
        httpx.get(f"{s.url}{ADMIN_PATH}", headers={TOKEN_HEADER: "anything-at-all-0123"}).status_code == 404
    )
    assert _run(s.url, "memory.list", {"user_id": "me"}, {TOKEN_HEADER: "x" * 20}).status_code == 404


def test_a_peer_on_another_machine_is_refused(make_runtime: RuntimeFactory) -> None:
    # A real socket cannot come from another host here; httpx's ASGI transport sets the peer.
    rt = make_runtime(serve=KEYS)
    app = create_app(rt, host="0.0.0.0", scheduler=False, admin_token=TOKEN, background_learning=False)

    async def ping(client: tuple[str, int]) -> int:
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://192.0.2.1:11435") as http:
            return (await http.get(ADMIN_PATH, headers={TOKEN_HEADER: TOKEN})).status_code

    def status(peer: tuple[str, int]) -> int:  # in a thread of its own: a browser test may hold this thread's loop
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, ping(peer)).result()

    assert status(("192.0.2.7", 50000)) == 403
    assert status(("192.0.2.1", 50000)) == 200  # from this machine, through its own address
    assert status(("127.0.0.1", 50000)) == 200


def test_local_peers() -> None:
    assert is_local_peer("127.0.0.1", "127.0.0.1") and is_local_peer("::1", "::1")
    assert is_local_peer("192.168.1.5", "192.168.1.5")  # this machine, through its own address
    assert not is_local_peer("192.168.1.9", "192.168.1.5") and not is_local_peer("192.168.1.9", None)
    assert not is_local_peer(None, "127.0.0.1") and not is_local_peer("", "")


def test_a_short_token_is_refused(make_runtime: RuntimeFactory) -> None:
    with pytest.raises(ConfigError, match="at least 16"):
        create_app(make_runtime(), scheduler=False, admin_token="short", background_learning=False)
