"""Issue #14: ``tianma chat``'s input — an unknown /command says so, and in a terminal the stdlib
readline edits lines and recalls each user's history from ``<home>/chat_history``."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tianma.chat_history import history_path, read_history, write_history
from tianma.cli import chat
from tianma.cli.app import app

readline = pytest.importorskip("readline")
runner = CliRunner(env={"COLUMNS": "200", "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9"})


def test_an_unknown_command_says_so_and_help_lists_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = runner.invoke(app, ["chat", "--home", str(home)], input="/likee\n/x[/b]\n/help\n/quit\n")
    assert done.exit_code == 0, (done.output, done.exception)
    assert "unknown command /likee — /help lists them / 未知命令 /likee" in done.output
    assert "unknown command /x[/b] — /help lists them" in done.output
    assert done.output.count("commands / 命令:") == 1  # only /help printed the list
    assert "/memories" in done.output.split("commands / 命令:", 1)[1]


def test_chat_uses_readline_in_a_terminal_and_keeps_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    path = history_path(home, "ann")
    write_history(path, ["我养了一只猫", "/why"])
    monkeypatch.setattr(chat, "terminal_readline", lambda: readline)  # as in a terminal
    readline.clear_history()
    done = runner.invoke(app, ["chat", "--user", "ann", "--home", str(home)], input="/quit\n")
    assert done.exit_code == 0, (done.output, done.exception)
    assert "you / 你> " in done.output  # the prompt went through input(), for readline to redraw
    loaded = [readline.get_history_item(i) for i in range(1, readline.get_current_history_length() + 1)]
    assert loaded == ["我养了一只猫", "/why"]  # Up recalls them
    assert read_history(path) == ["我养了一只猫", "/why"]
    readline.clear_history()
    other = runner.invoke(app, ["chat", "--user", "bob", "--home", str(home)], input="/quit\n")
    assert other.exit_code == 0 and readline.get_current_history_length() == 0  # not ann's lines


def test_forgetting_everything_about_a_user_deletes_their_chat_history(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = history_path(home, "ann")
    write_history(path, ["我养了一只猫"])
    done = runner.invoke(app, ["memory", "forget", "--all", "--yes", "--user", "ann", "--home", str(home)])
    assert done.exit_code == 0, (done.output, done.exception)
    assert not path.exists()


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_up_recalls_the_last_line_in_a_real_terminal(tmp_path: Path) -> None:
    """The user's keys through a pty, as in a terminal: Up brings back ``/why`` (before: ``^[[A``)."""
    import pty

    home = tmp_path / "home"
    master, slave = pty.openpty()
    env = {
        **os.environ,
        "TIANMA_OLLAMA__BASE_URL": "http://127.0.0.1:9",
        "TERM": "xterm",
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.Popen([sys.executable, "-c", "from tianma.cli import main; main()", "chat", "--home", str(home)],
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)  # fmt: skip
    os.close(slave)
    out = b""

    def wait_for(prompts: int) -> None:
        nonlocal out
        deadline = time.monotonic() + 60
        while out.count("你> ".encode()) < prompts and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    out += os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    return

    try:
        for prompts, keys in ((1, b"/why\r"), (2, b"\x1b[A\r"), (3, b"/quit\r")):
            wait_for(prompts)
            os.write(master, keys)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill() if proc.poll() is None else None
        os.close(master)
    text = out.decode(errors="replace")
    assert text.count("no reply yet") == 2 and "^[[A" not in text, text
    assert read_history(history_path(home, "me")) == ["/why", "/quit"]
