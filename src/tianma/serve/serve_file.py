"""``<home>/serve.json``: how the CLI finds the ``tianma serve`` that holds a data home.

``tianma serve`` writes it once it listens and removes it on a clean exit: the URL to reach it
on this machine, its pid and a random admin token for this run (file mode 0600, so only the
home's owner can read it; the token is the only key of the admin API, see
:mod:`tianma.serve.admin_api`). A file left by a server that died (dead pid, or no answer) is
stale: the CLI ignores it and opens the home itself, and the next ``serve`` replaces it.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

FILE_NAME = "serve.json"
TOKEN_HEADER = "X-Tianma-Admin-Token"
"""The header the CLI sends the admin token in (never ``Authorization``: that carries user keys)."""
ADMIN_PATH = "/tianma/admin"
"""Prefix of the admin API: ``GET`` it to ping, ``POST <prefix>/ops/<name>`` to run an operation."""


@dataclass(frozen=True, slots=True)
class ServeInfo:
    """What one running ``tianma serve`` tells the CLI about itself."""

    url: str
    """Where this machine reaches it, e.g. ``http://127.0.0.1:11435``."""
    pid: int
    """The server's process id (a dead pid makes the file stale)."""
    token: str
    """The admin token of this run (random, never logged)."""
    home: str
    """The data home it serves, resolved."""
    started_at: str
    """When it started listening (ISO 8601, UTC)."""


def path_of(home: Path) -> Path:
    """``<home>/serve.json``."""
    return home.expanduser() / FILE_NAME


def new_token() -> str:
    """A fresh admin token (256 random bits)."""
    return secrets.token_urlsafe(32)


def local_url(host: str, port: int) -> str:
    """The URL a process on this machine uses for a server bound to ``host``: a wildcard bind
    (``0.0.0.0``, ``::``) is reached over loopback."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def describe(home: Path, url: str, token: str, pid: int | None = None) -> ServeInfo:
    """The info of a server of ``home`` at ``url`` (this process unless ``pid``), started now."""
    return ServeInfo(url=url, pid=os.getpid() if pid is None else pid, token=token,
                     home=str(home.expanduser().resolve()),
                     started_at=datetime.now(UTC).isoformat(timespec="seconds"))  # fmt: skip


def write(home: Path, info: ServeInfo) -> Path:
    """Write the file atomically, readable by its owner only (0600); returns its path."""
    target = path_of(home)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(asdict(info), out)
    os.replace(tmp, target)
    return target


def read(home: Path) -> ServeInfo | None:
    """The file's content; None when there is none or it is not one this version wrote."""
    try:
        data = json.loads(path_of(home).read_text(encoding="utf-8"))
        info = ServeInfo(**data)
    except (OSError, ValueError, TypeError):
        return None
    if not (isinstance(info.url, str) and isinstance(info.pid, int) and isinstance(info.token, str)):
        return None
    return info


def remove(home: Path, token: str) -> None:
    """Remove the file if it is still the one of the run holding ``token`` (a second server
    that failed to start must not remove the first one's)."""
    info = read(home)
    if info is not None and secrets.compare_digest(info.token.encode(), token.encode()):
        path_of(home).unlink(missing_ok=True)


def is_alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0 checks without sending anything; on
    Windows, where signal 0 would be a Ctrl-C, only the ping decides)."""
    if pid <= 0:
        return False
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True
