"""Signing in to the review UI: the same keys as the API, a login page, a strict cookie, form tokens."""

from __future__ import annotations

import pytest

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tests.unit.serve.ui.conftest import ClientFactory, UiClient
from tests.unit.serve.ui.seed import Seeded
from tianma import Runtime
from tianma.serve import create_app


def pages(s: Seeded) -> list[str]:
    return [
        "/ui/", "/ui/memories", f"/ui/memories/{s.preference}", f"/ui/memories/{s.preference}/forget",
        "/ui/reviews", "/ui/strategies", "/ui/runs", f"/ui/runs/{s.run_id}", "/ui/learning", "/ui/turns",
        f"/ui/turns/{s.fact_turn}",
    ]  # fmt: skip


@pytest.mark.parametrize("key", [None, "key-mallory"])
def test_without_a_known_key_every_page_and_action_goes_to_the_login(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime, key: str | None
) -> None:
    nobody = client(key)
    alice = seeded["alice"]
    for path in pages(alice):
        answer = nobody.get(path)
        assert (answer.status_code, answer.headers["location"]) == (303, "/ui/login"), path
    answer = nobody.http.post(f"/ui/memories/{alice.preference}/forget", data={"token": "x"})
    assert (answer.status_code, answer.headers["location"]) == (303, "/ui/login")
    assert rt.memory.store.get(alice.preference).content == "喜欢花生味的零食"
    assert nobody.get("/ui/login").status_code == 200
    assert nobody.get("/ui/static/ui.css").status_code == 200  # the stylesheet is not secret


def test_login_sets_a_strict_httponly_cookie_and_logout_clears_it(
    client: ClientFactory, seeded: dict[str, Seeded]
) -> None:
    browser = client(None)
    wrong = browser.http.post("/ui/login", data={"key": "key-mallory"})
    assert (
        wrong.status_code == 401
        and "密钥无效 Unknown key" in wrong.text
        and "set-cookie" not in wrong.headers
    )
    done = browser.http.post("/ui/login", data={"key": "key-a"})
    assert (done.status_code, done.headers["location"]) == (303, "/ui/")
    cookie = done.headers["set-cookie"]
    assert "tianma_key=key-a" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert "Path=/ui" in cookie and "Secure" not in cookie  # plain http on loopback
    page = browser.get("/ui/memories")
    assert page.status_code == 200 and "喜欢花生味的零食" in page.text and "芒果" not in page.text
    assert browser.get("/ui/login").headers["location"] == "/ui/"  # already signed in
    out = browser.post("/ui/logout")
    assert (out.status_code, out.headers["location"]) == (303, "/ui/login")
    assert 'tianma_key=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
    assert browser.get("/ui/memories").status_code == 303


def test_a_post_without_this_servers_form_token_is_refused(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice, bobs_browser = client("key-a"), client("key-b")
    pref = seeded["alice"].preference
    for token in ("", "0" * 64, bobs_browser.token()):
        answer = alice.http.post(f"/ui/memories/{pref}/forget", data={"token": token})
        assert answer.status_code == 403 and "表单已过期" in answer.text
    assert rt.memory.store.get(pref).content == "喜欢花生味的零食"
    assert alice.post(f"/ui/memories/{pref}/forget").status_code == 303


def test_a_keyless_loopback_server_needs_no_login(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(embedder=CharacterEmbedder(), name="keyless")
    rt.ingest(rt.settings.user, [{"role": "user", "text": "我住在杭州", "at": "2026-05-04T09:00:00Z",
                                  "dialogue_id": "old"}])  # fmt: skip
    browser = UiClient(create_app(rt, scheduler=False), None)
    try:
        page = browser.get("/ui/memories")
        assert page.status_code == 200 and "我住在杭州" in page.text
        assert 'id="user-select"' in page.text  # the single user is the admin
        assert "退出 Log out" not in page.text
        assert browser.get("/ui/login").headers["location"] == "/ui/"
    finally:
        browser.http.close()
