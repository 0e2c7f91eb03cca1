"""``tianma chat``: a REPL over the real runtime, with feedback, ``/why``, line editing and history."""

from __future__ import annotations

import uuid
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from tianma.chat_history import history_path
from tianma.cli.app import HomeOption, UserOption, app, console, plain, settings_from
from tianma.cli.connection import Connection, connect
from tianma.cli.history import ChatInput, terminal_readline
from tianma.cli.memory import records_table
from tianma.errors import ChatModelUnavailableError
from tianma.guardrails.secrets import storable
from tianma.operations import chat as ops
from tianma.operations.memory import list_memories
from tianma.settings import Settings
from tianma.turn import Turn

HELP = """commands / 命令:
  /like  /dislike      feedback on the last reply / 对上一条回复点赞或点踩
  /fix <text>          correct the last reply / 纠正上一条回复
  /why                 memories and strategies behind the last reply / 上一条回复用了哪些记忆
  /new                 start a new dialogue / 开始新对话
  /memories            what is remembered about you / 查看记忆
  /help                this list / 显示本帮助
  /quit                leave / 退出
Up/Down recall earlier lines (kept in <home>/chat_history) / 上下键调出历史输入"""
PROMPT = Text("you / 你> ", style="bold cyan")


def why_table(turn: Turn) -> Table:
    """The memories and strategies a turn injected."""
    table = Table(title="why / 依据")
    for col in ("what", "id", "score", "content", "from events"):
        table.add_column(col, overflow="fold")
    for m in turn.memories:
        table.add_row(
            *plain(
                m.kind, m.id[:8], f"{m.score:.3f}", m.content, ", ".join(e[:8] for e in m.source_event_ids)
            )
        )
    for s in turn.strategies:
        table.add_row(*plain("strategy" + (" (explored)" if s.explored else ""), s.id[:8], "", s.content, ""))
    for r in turn.resident:
        what = "statement (resident)" if r.kind == "event" else f"{r.kind} (resident)"
        what = f"said later on {r.later_on[:8]} / 后来说" if r.later_on else what
        table.add_row(*plain(what, r.id[:8], "", r.content, ", ".join(e[:8] for e in r.source_event_ids)))
    if not (turn.memories or turn.strategies or turn.resident):
        table.add_row("—", "", "", "nothing was injected / 没有注入记忆", "")
    return table


def handle_command(
    conn: Connection, settings: Settings, user_id: str, line: str, last: Turn | None
) -> str | None:
    """Run a slash command; returns ``"quit"`` or ``"new"`` when the loop must react."""
    cmd, _, arg = line.partition(" ")
    if cmd in ("/quit", "/exit", "/q"):
        return "quit"
    if cmd == "/new":
        return "new"
    if cmd == "/memories":
        records = [r for r in conn.call(list_memories, user_id) if r.kind != "signal"]
        console.print(
            records_table(
                records[-30:], f"{user_id}: last {min(30, len(records))} of {len(records)}", settings.zone
            )
        )
    elif cmd in ("/like", "/dislike", "/fix"):
        if last is None:
            console.print("no reply yet / 还没有回复")
        elif cmd == "/fix" and not arg.strip():
            console.print("usage: /fix <what is right> / 用法：/fix <正确内容>")
        else:
            kind = {"/like": "like", "/dislike": "dislike", "/fix": "correction"}[cmd]
            conn.call(ops.feedback, last.event_id, kind, arg.strip() or None)
            console.print(f"recorded {kind} / 已记录")
    elif cmd == "/why":
        console.print(why_table(last) if last else "no reply yet / 还没有回复")
    elif cmd in ("/help", "/?"):
        console.print(HELP, markup=False)
    else:
        console.print(
            f"unknown command {cmd} — /help lists them / 未知命令 {cmd}，输入 /help 查看", markup=False
        )
    return None


@app.command()
def chat(
    user: str | None = UserOption,
    dialogue: str | None = typer.Option(None, "--dialogue", "-d", help="Continue this dialogue id."),
    home: Path | None = HomeOption,
) -> None:
    """Talk to the assistant (needs Ollama; see `tianma doctor`).

    In a terminal, lines can be edited and Up/Down recall earlier ones (each user's last
    lines are kept in <home>/chat_history, secrets removed). / 支持行编辑与历史输入。
    """
    settings = settings_from(home)
    user_id = user or settings.user
    dialogue_id = dialogue or uuid.uuid4().hex
    last: Turn | None = None
    with connect(settings) as conn, _reader(settings, user_id) as reader:
        console.print(f"tianma chat — user {user_id}, model {settings.ollama.model}. /help for commands.",
                      markup=False)  # fmt: skip
        if conn.server is not None:
            console.print(f"(through tianma serve at {conn.server.url}: replies use its settings / 经由正在运行的服务)",
                          markup=False)  # fmt: skip
        while True:
            try:
                line = reader.read(PROMPT).strip()
            except (EOFError, KeyboardInterrupt):
                break
            if not line:
                continue
            if line.startswith("/"):
                action = handle_command(conn, settings, user_id, line, last)
                if action == "quit":
                    break
                if action == "new":
                    conn.call(ops.end_dialogue, dialogue_id) if last else None
                    dialogue_id, last = uuid.uuid4().hex, None
                    console.print("new dialogue / 新对话")
                continue
            try:
                last = conn.call(ops.chat, user_id, line, dialogue_id)
            except ChatModelUnavailableError as exc:
                console.print(Text(str(exc), style="red"))
                console.print("(your message was saved / 你的消息已保存)")
                continue
            console.print(Text.assemble(("tianma>", "bold green"), " ", last.reply))
        if last is not None:
            conn.call(ops.end_dialogue, dialogue_id)


def _reader(settings: Settings, user_id: str) -> ChatInput:
    """The user's input: line editing in a terminal, history kept as the store keeps messages."""

    def clean(line: str) -> str:
        return storable(line.strip(), settings.guardrails.pii_redaction)[0]

    return ChatInput(console, history_path(settings.home, user_id), clean, terminal_readline())
