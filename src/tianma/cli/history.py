"""``tianma chat``'s line editing and history: the stdlib ``readline`` when Python has it and the
chat runs in a terminal, with each user's recent lines in ``<home>/chat_history/<user>``.

The history file is a copy of what the user typed (:mod:`tianma.chat_history`): the lines are
cleaned as the store cleans messages (:func:`tianma.guardrails.secrets.storable`) before they
are kept, and a forget deletes them.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, TracebackType

from rich.console import Console
from rich.text import Text

from tianma.chat_history import HISTORY_LENGTH, read_history, write_history

_SGR = re.compile(r"(\x1b\[[0-9;]*m)")


def terminal_readline() -> ModuleType | None:
    """The stdlib ``readline`` when stdin and stdout are a terminal and Python has it (Windows'
    Python has none: the chat then reads plain lines)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    try:
        import readline
    except ImportError:
        return None
    return readline


def readline_prompt(console: Console, prompt: Text) -> str:
    """``prompt`` rendered for ``input()``, its colour codes between readline's ``\\x01``/``\\x02``
    markers so that readline knows the prompt's width: a prompt printed apart from ``input()`` is
    erased by readline on Backspace or Up (https://github.com/Textualize/rich/issues/2293)."""
    with console.capture() as captured:
        console.print(prompt, end="")
    return _SGR.sub("\x01\\1\x02", captured.get())


class ChatInput:
    """Reads the chat's lines: with readline's editing and the user's history when ``editor`` is
    the readline module, else plainly (a pipe, a test, Windows).

    Args:
        console: where the prompt goes.
        path: the user's history file.
        clean: what of a line may be kept on disk (the store's redaction).
        editor: the readline module, or None.
    """

    def __init__(
        self, console: Console, path: Path, clean: Callable[[str], str], editor: ModuleType | None
    ) -> None:
        self._console = console
        self._path = path
        self._clean = clean
        self._editor = editor
        self._loaded = 0

    def read(self, prompt: Text) -> str:
        """One line (``EOFError`` at the end of input, ``KeyboardInterrupt`` on Ctrl-C)."""
        if self._editor is None:
            return self._console.input(prompt)
        return input(readline_prompt(self._console, prompt))  # readline adds the line to its history

    def __enter__(self) -> ChatInput:
        if self._editor is not None:
            self._editor.clear_history()
            for line in read_history(self._path)[-HISTORY_LENGTH:]:
                self._editor.add_history(line)
            self._loaded = self._editor.get_current_history_length()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._editor is None:
            return
        editor = self._editor
        items: list[str | None] = [
            editor.get_history_item(i) for i in range(1, editor.get_current_history_length() + 1)
        ]
        old = [line for line in items[: self._loaded] if line]  # read from the file: already clean
        new = [self._clean(line) for line in items[self._loaded :] if line and line.strip()]
        with contextlib.suppress(OSError):  # an unsaved history must not fail the chat that just ended
            write_history(self._path, [*old, *new])
