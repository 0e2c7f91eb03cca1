"""Another site's page cannot write into the user's memory (Origin, Host, Content-Type)."""

from __future__ import annotations

import httpx

from tests.unit.serve.conftest import MODEL, ServeFactory

BODY = {"model": MODEL, "stream": False, "messages": [{"role": "user", "content": "我不吃香菜"}]}


def test_a_page_of_another_origin_is_refused_and_nothing_is_recorded(serve: ServeFactory) -> None:
    s = serve()
    port = s.url.rsplit(":", 1)[1]
    for origin in ("https://evil.example", f"http://127.0.0.1:{int(port) + 1}"):  # also another local port
        r = httpx.post(f"{s.url}/api/chat", content='{"model":"x"}', headers={"Origin": origin, "Content-Type": "text/plain"})
        assert r.status_code == 403 and "origin" in r.json()["error"]
    assert s.runtime.memories("me", "event") == []


def test_a_browsers_form_post_is_refused_but_curl_style_posts_work(serve: ServeFactory) -> None:
    s = serve()
    own = s.url  # the server's own origin: its review UI
    r = httpx.post(f"{s.url}/api/chat", content=httpx.Request("POST", s.url, json=BODY).content,
                   headers={"Origin": own, "Content-Type": "text/plain"})  # fmt: skip
    assert r.status_code == 415
    assert httpx.post(f"{s.url}/api/chat", json=BODY, headers={"Origin": own}, timeout=60).status_code == 200
    curl = httpx.post(f"{s.url}/api/chat", content=httpx.Request("POST", s.url, json=BODY).content,
                      headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=60)  # like curl -d
    assert curl.status_code == 200


def test_a_rebound_host_name_is_refused_and_allowed_ones_are_configurable(serve: ServeFactory) -> None:
    s = serve()
    assert httpx.get(f"{s.url}/api/version", headers={"Host": "attacker.example"}).status_code == 403
    assert httpx.get(f"{s.url}/api/version", headers={"Host": "localhost"}).status_code == 200
    named = serve(name="named", serve={"allowed_hosts": ["nas.local"], "allowed_origins": ["https://chat.example"]})
    assert httpx.get(f"{named.url}/api/version", headers={"Host": "nas.local:11435"}).status_code == 200
    ok = httpx.post(f"{named.url}/api/chat", json=BODY, headers={"Origin": "https://chat.example"}, timeout=60)
    assert ok.status_code == 200
