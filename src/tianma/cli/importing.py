"""``tianma import``: move old chat history in (ChatGPT, Open WebUI, JSONL), beside a running
``tianma serve`` too, with a progress bar and a report of what became of it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tianma.cli.app import HomeOption, app, console, plain, settings_from
from tianma.cli.connection import Connection, connect
from tianma.cli.worker import QUEUE_HINT
from tianma.errors import ConfigError, InvalidInputError
from tianma.importing.days import day_of
from tianma.importing.formats import Requested, read_export
from tianma.importing.messages import Parsed, Problem
from tianma.importing.pipeline import Stored
from tianma.importing.turns import batches, turns_of
from tianma.operations import importing as ops
from tianma.settings import Settings

DAYS_PER_CALL = 30
"""Day summaries written per call (each call holds the memory lock while it writes)."""
SHOWN_PROBLEMS = 10
LEARNT = ("created_active", "created_pending")

T = TypeVar("T")


@dataclass(slots=True)
class ImportReport:
    """What one ``tianma import`` did (also what its tests read)."""

    stored: Stored = field(default_factory=Stored)
    malformed: list[Problem] = field(default_factory=list)
    ignored: int = 0
    messages: int = 0
    days_created: int = 0
    days_updated: int = 0
    windows: int = 0
    learnt: int = 0
    """Records the reflections over the old days created (active or pending)."""
    queued: bool = False
    """The summaries and the learning were left to the job table's workers (``--queue``)."""

    def add(self, batch: Stored) -> None:
        for f in fields(Stored):
            mine, theirs = getattr(self.stored, f.name), getattr(batch, f.name)
            setattr(self.stored, f.name, mine + theirs)

    def lines(self) -> list[str]:
        """The report, a line per fact, English / Chinese."""
        s = self.stored
        memories = s.searchable + self.days_created + self.learnt
        share = 100 * (s.searchable_chars / s.chars) if s.chars else 0.0
        out = [
            f"messages read: {self.messages} ({s.turns} turns; {self.ignored} system/tool entries skipped) "
            f"/ 读取消息 {self.messages} 条",
            f"events kept: {s.added} new, {s.already} already imported, {s.live} already recorded live "
            f"/ 新增事件 {s.added} 条，已导入 {s.already} 条，实时已记录 {s.live} 条",
            f"searchable: {s.searchable} messages passed the write filter ({s.statements} statements, "
            f"{s.closed} earlier ones superseded, {s.outdated} superseded by what was said later), the rest "
            "stays in the log only "
            f"/ 通过写入过滤、可检索 {s.searchable} 条，其余仅存日志",
            f"day summaries: {self.days_created} new, {self.days_updated} updated / 每日摘要：新增 {self.days_created}，"
            f"更新 {self.days_updated}",
            f"learnt: {self.learnt} memories from {self.windows} reflection(s) over the old days "
            f"/ 从旧对话中学到 {self.learnt} 条记忆",
            f"memory from the raw volume: {memories} items for {self.messages} messages, "
            f"{share:.1f}% of the characters searchable / 原始数据中成为记忆的比例：{share:.1f}%",
            f"screened: {s.secrets} secret(s) replaced, {s.pii} PII item(s) handled, {len(s.rejected)} message(s) "
            f"rejected, {s.replies_dropped} answer(s) dropped, {s.cut} cut to serve.max_message_chars "
            f"/ 已过滤：密钥 {s.secrets}，拒收 {len(s.rejected)}",
        ]
        for title, problems in (("rejected / 拒收", s.rejected), ("malformed, skipped / 格式错误已跳过", self.malformed)):
            if problems:
                out.append(f"{title}: {len(problems)}")
                out += [f"  {p.position}: {p.reason}" for p in problems[:SHOWN_PROBLEMS]]
                if len(problems) > SHOWN_PROBLEMS:
                    out.append(f"  … {len(problems) - SHOWN_PROBLEMS} more")
        return out


def run_import(
    conn: Connection, user_id: str, parsed: Parsed, tag: str, zone: Any,
    progress: Callable[[str, int, int], None] = lambda *_: None, queue: bool = False,
) -> ImportReport:  # fmt: skip
    """Store, summarise and learn from ``parsed`` for ``user_id`` over ``conn``; ``progress``
    hears (stage, done, total) after every step. ``queue``: once stored, the summaries and the
    learning are one job in the job table for ``tianma worker`` (``report.queued``).

    Raises:
        ConfigError: ``queue`` on a home that does not use the job table (nothing is stored).
    """
    report = ImportReport(malformed=list(parsed.problems), ignored=parsed.ignored, messages=len(parsed.messages))
    turns = turns_of(parsed.messages)
    if queue and not conn.call(ops.queueable):  # asked before anything is stored
        raise ConfigError(f"--queue: no job table here — {QUEUE_HINT}")
    done = 0
    for batch in batches(turns):
        report.add(conn.call(ops.store, user_id, batch, tag))
        done += len(batch)
        progress("storing / 写入", done, len(turns))
    if not turns or not (report.stored.added or report.stored.mine):
        return report  # nothing new: a re-import changes nothing
    days = sorted({day_of(t.message.at, zone) for t in turns if t.message.role == "user"})
    if queue:
        report.queued = conn.call(ops.queue, user_id, tag, turns[0].message.at, turns[-1].message.at, days)
        return report
    for i, chunk in enumerate(_chunks(days, DAYS_PER_CALL)):
        summary = conn.call(ops.summarise, user_id, list(chunk))
        report.days_created += summary.created
        report.days_updated += summary.updated
        progress("summarising days / 按天压缩", min(len(days), (i + 1) * DAYS_PER_CALL), len(days))
    start, end = turns[0].message.at, turns[-1].message.at
    windows = conn.call(ops.windows, user_id, start, end, tag)
    for i, window in enumerate(windows):
        reflection = conn.call(ops.reflect, user_id, window, tag)
        report.windows += 1
        report.learnt += sum(reflection.counts.get(k, 0) for k in LEARNT)
        progress("learning / 学习", i + 1, len(windows))
    return report


def owner_of(parsed: Parsed, settings: Settings) -> str | None:
    """The tianma user an Open WebUI export belongs to when ``tianma serve`` keeps each Open WebUI
    user's memory under their Open WebUI id (``serve.trust_openwebui_user`` or a JWT secret):
    the one ``user_id`` of its chats."""
    per_user = settings.serve.trust_openwebui_user or settings.serve.openwebui_jwt_secret is not None
    return next(iter(parsed.owners)) if per_user and len(parsed.owners) == 1 else None


def import_tag(path: Path, user_id: str) -> str:
    """One import's id: the file's content and the user (the same file again is the same import)."""
    digest = hashlib.sha256(user_id.encode("utf-8") + b"\x00")
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    return (items[i : i + size] for i in range(0, len(items), size))


@app.command("import")
def import_history(
    file: Path = typer.Argument(..., help="conversations.json (or ChatGPT's export zip), an Open WebUI chat export, "
                                          "or a JSONL file (docs/import.md)."),
    user: str | None = typer.Option(None, "--user", "-u", help="User id (default: the Open WebUI user of an Open "
                                    "WebUI export when serve keeps each one's memory, else setting `user`)."),
    fmt: str = typer.Option("auto", "--format", "-f", help="auto | chatgpt | openwebui | jsonl"),
    queue: bool = typer.Option(False, "--queue", help="Store the turns, then leave the day summaries and the "
                               "learning to `tianma worker` (job table: PostgreSQL or learning.queue = \"database\") "
                               "/ 写入后把压缩与学习交给任务队列。"),
    home: Path | None = HomeOption,
) -> None:  # fmt: skip
    """Move old chat history in: stored with its original times, screened (secrets, planted
    instructions), compressed by day, learnt from in order. Safe to run again: what is stored is
    not added twice, and an interrupted import continues. 导入旧的聊天记录。"""
    if fmt not in ("auto", "chatgpt", "openwebui", "jsonl"):
        raise InvalidInputError(f"--format must be auto, chatgpt, openwebui or jsonl, not {fmt!r} / 格式无效")
    settings = settings_from(home)
    if not file.is_file():
        raise InvalidInputError(f"{file} is not a file / 文件不存在")
    requested: Requested = fmt  # type: ignore[assignment]
    parsed = read_export(file, requested, settings.zone)
    user_id = user or owner_of(parsed, settings) or settings.user
    if not parsed.messages:
        shown = "; ".join(f"{p.position}: {p.reason}" for p in parsed.problems[:SHOWN_PROBLEMS])
        raise InvalidInputError(f"{file}: no message to import ({parsed.format}){': ' + shown if shown else ''} "
                                "/ 没有可导入的消息")  # fmt: skip
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())  # fmt: skip
    with connect(settings) as conn, Progress(*columns, console=console) as bar:
        if conn.server is not None:
            bar.console.print(*plain(f"(through tianma serve at {conn.server.url} / 经由正在运行的服务)"))
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        report = run_import(conn, user_id, parsed, import_tag(file, user_id), settings.zone, progress, queue)
    console.print(*plain(f"imported {file.name} ({parsed.format}) for user {user_id} / 已导入"))
    for line in report.lines():
        console.print(*plain(line))
    if report.queued:
        console.print(*plain("day summaries and learning queued for `tianma worker` (see `tianma jobs list`) "
                             "/ 压缩与学习已排入任务队列"))
