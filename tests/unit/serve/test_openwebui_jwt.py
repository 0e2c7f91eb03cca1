"""Open WebUI's signed user header (``X-OpenWebUI-User-Jwt``, HS256 with the shared secret)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
import pytest

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma.errors import BadUserTokenError
from tianma.serve.openwebui import signed_user

SECRET = "shared-with-open-webui-0123456789"


def _token(secret: str = SECRET, **claims: Any) -> str:
    now = int(time.time())
    payload = {"sub": "u-42", "email": "a@b.c", "role": "user", "iss": "open-webui", "iat": now, "exp": now + 300}
    payload.update(claims)
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, secret, algorithm="HS256")


def test_a_token_signed_with_the_secret_names_its_user() -> None:
    assert signed_user({"x-openwebui-user-jwt": _token()}, SECRET) == "u-42"
    assert signed_user({}, SECRET) is None


@pytest.mark.parametrize(
    "token",
    [
        _token("another-secret-entirely-0123456789"),
        _token(exp=int(time.time()) - 10),
        _token(iss="someone-else"),
        _token(sub=None),
        _token(sub="../../etc"),
        jwt.encode({"sub": "u-42", "iss": "open-webui", "exp": int(time.time()) + 300}, key=None, algorithm="none"),
        "not.a.token",
    ],
    ids=["wrong-secret", "expired", "issuer", "no-sub", "bad-sub", "alg-none", "garbage"],
)
def test_a_token_that_does_not_verify_is_refused(token: str) -> None:
    with pytest.raises(BadUserTokenError):
        signed_user({"x-openwebui-user-jwt": token}, SECRET)


def test_serve_takes_the_user_from_the_signed_header_and_refuses_a_forged_one(serve: ServeFactory) -> None:
    s = serve(serve={"openwebui_jwt_secret": SECRET})
    body = {"model": MODEL, "stream": False, "messages": [{"role": "user", "content": "我喜欢爬山"}]}
    ok = httpx.post(f"{s.url}/api/chat", json=body, headers={"X-OpenWebUI-User-Jwt": _token()}, timeout=30)
    assert ok.status_code == 200
    assert [e.content for e in s.runtime.memories("u-42", "event")] == ["我喜欢爬山"]
    forged = httpx.post(f"{s.url}/api/chat", json=body, timeout=30,
                        headers={"X-OpenWebUI-User-Jwt": _token("guessed-secret-0123456789abcdefghij")})  # fmt: skip
    assert forged.status_code == 401
    unsigned = httpx.post(f"{s.url}/api/chat", json=body, headers={"X-OpenWebUI-User-Id": "u-99"}, timeout=30)
    assert unsigned.status_code == 200 and s.runtime.memories("u-99", "event") == []  # ignored: the default user
    assert len(s.runtime.memories("u-42", "event")) == 1
