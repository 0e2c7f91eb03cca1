"""Who is asking: an API key per user, admin keys, or the default user on a loopback NAS."""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from tianma.errors import ConfigError, UnauthorizedError
from tianma.settings import ServeSettings

KEY_COOKIE = "tianma_key"
"""The review UI keeps the key a user typed at ``/ui/login`` in this cookie (HttpOnly, SameSite)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller of one request."""

    user_id: str
    """Whose memory chat turns use and whose data the UI shows by default."""
    admin: bool
    """True for an admin key, and for the single user of a keyless loopback server."""


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1``, ``localhost``: only this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Authenticator:
    """Maps a request's key to a :class:`Principal`.

    With no key configured the server must be bound to loopback, and every request is the
    default user (a single-user NAS); with any key configured, every request needs one.

    Raises:
        ConfigError: no keys while binding to a non-loopback address.
    """

    def __init__(self, settings: ServeSettings, default_user: str, host: str) -> None:
        self._users = dict(settings.api_keys)
        self._admins = list(settings.admin_keys)
        self.default_user = default_user
        self.open = not self._users and not self._admins
        if self.open and not is_loopback(host):
            raise ConfigError(
                f"tianma serve on {host} needs API keys (serve.api_keys, TIANMA_SERVE__API_KEYS) "
                "so other machines cannot read your memory; or bind to 127.0.0.1"
            )

    def key_of(self, conn: HTTPConnection) -> str | None:
        """The key sent as ``Authorization: Bearer``, ``X-API-Key`` or the UI's cookie."""
        auth = conn.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
        return conn.headers.get("x-api-key") or conn.cookies.get(KEY_COOKIE) or None

    def principal(self, key: str | None) -> Principal:
        """Who holds ``key``.

        Raises:
            UnauthorizedError: keys are required and ``key`` is missing or unknown.
        """
        if self.open:
            return Principal(self.default_user, admin=True)
        if key:
            for admin in self._admins:
                if hmac.compare_digest(admin.encode(), key.encode()):
                    return Principal(self.default_user, admin=True)
            for known, user_id in self._users.items():
                if hmac.compare_digest(known.encode(), key.encode()):
                    return Principal(user_id, admin=False)
        raise UnauthorizedError("missing API key" if not key else "unknown API key", code="invalid_api_key")

    def authenticate(self, conn: HTTPConnection) -> Principal:
        """The principal of a request (see :meth:`principal`)."""
        return self.principal(self.key_of(conn))
