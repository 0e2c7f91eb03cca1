"""Issue #14: ``tianma chat``'s history — the real stdlib readline, a bounded file per user
under the home, kept as the store keeps messages (no secrets), and gone with ``forget``."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console
from rich.text import Text

from tianma.chat_history import HISTORY_LENGTH, forget_history, history_path, read_history, write_history
from tianma.cli.history import ChatInput, readline_prompt
from tianma.guardrails.secrets import storable

readline = pytest.importorskip("readline")
SECRET = "Xk9#mP2vQ7wz"


@pytest.fixture
def editor() -> Iterator[ModuleType]:
    """The real readline module, its history emptied before and after."""
    readline.clear_history()
    yield readline
    readline.clear_history()


def clean(line: str) -> str:
    return storable(line.strip())[0]


def _history(module: ModuleType) -> list[str]:
    return [module.get_history_item(i) for i in range(1, module.get_current_history_length() + 1)]


def test_history_is_loaded_bounded_and_saved_without_secrets(tmp_path: Path, editor: ModuleType) -> None:
    path = history_path(tmp_path, "me")
    write_history(path, [f"line {i}" for i in range(HISTORY_LENGTH + 20)])
    assert read_history(path)[0] == "line 20"  # the oldest went first
    with ChatInput(Console(), path, clean, editor):
        assert _history(editor)[-1] == f"line {HISTORY_LENGTH + 19}"  # Up recalls the last session
        editor.add_history(f"我的密码是 {SECRET}")  # what input() does with each line typed
        editor.add_history("我喜欢爵士乐")
    saved = read_history(path)
    assert len(saved) == HISTORY_LENGTH and saved[-1] == "我喜欢爵士乐"
    assert saved[-2].startswith("我的密码是") and SECRET not in path.read_text(encoding="utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_without_readline_nothing_is_kept(tmp_path: Path) -> None:
    path = history_path(tmp_path, "me")
    with ChatInput(Console(), path, clean, None):
        pass
    assert not path.exists()


def test_one_file_per_user_and_no_id_escapes_the_folder(tmp_path: Path) -> None:
    paths = {history_path(tmp_path, user) for user in ("me", "..", "a/b", "../x", "你")}
    assert len(paths) == 5 and all(p.parent == tmp_path / "chat_history" for p in paths)


def test_forget_deletes_the_history_or_the_forgotten_message(tmp_path: Path) -> None:
    path = history_path(tmp_path, "me")
    write_history(path, ["我的生日是五月三日。", "/why", "我喜欢爵士乐。"])
    forget_history(tmp_path, "me", "我的生日是五月三日。")
    assert read_history(path) == ["/why", "我喜欢爵士乐。"]
    forget_history(tmp_path, "me")
    assert not path.exists()
    forget_history(tmp_path, "nobody")  # nothing to forget is fine


def test_the_prompt_tells_readline_which_bytes_take_no_room() -> None:
    console = Console(force_terminal=True, color_system="standard")
    prompt = readline_prompt(console, Text("you / 你> ", style="bold cyan"))
    assert prompt.startswith("\x01\x1b[") and "\x02you / 你> \x01" in prompt and prompt.endswith("\x02")
    assert readline_prompt(Console(force_terminal=False), Text("you> ", style="bold")) == "you> "
