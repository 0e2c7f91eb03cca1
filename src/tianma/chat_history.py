"""``<home>/chat_history/<user>``: the lines a user typed into ``tianma chat`` (its readline
history), kept as the store keeps messages — secrets removed and PII redacted as the settings say
— readable by its owner only, and forgotten with the user's messages (:mod:`tianma.erasure`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

HISTORY_LENGTH = 500
"""Lines kept per user; the oldest go first."""
HISTORY_DIR = "chat_history"


def history_path(home: Path, user_id: str) -> Path:
    """``<home>/chat_history/<user>``, the user id quoted so that any id is one safe file name
    (``/`` and dots too: ``..`` must not name the folder above)."""
    return home.expanduser() / HISTORY_DIR / (quote(user_id, safe="").replace(".", "%2E") or "%")


def read_history(path: Path) -> list[str]:
    """The saved lines, oldest first (none when there is no readable file)."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def write_history(path: Path, lines: Sequence[str]) -> None:
    """Keep the last :data:`HISTORY_LENGTH` lines, atomically, readable by the owner only (0600)."""
    kept = [line for line in lines if line.strip()][-HISTORY_LENGTH:]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.writelines(f"{line}\n" for line in kept)
    os.replace(tmp, path)


def forget_history(home: Path, user_id: str, content: str | None = None) -> None:
    """Delete a user's chat history, or (``content``) the lines that are that message."""
    path = history_path(home, user_id)
    if content is None:
        path.unlink(missing_ok=True)
        return
    lines = read_history(path)
    kept = [line for line in lines if line.strip() != content.strip()]
    if len(kept) != len(lines):
        write_history(path, kept)
