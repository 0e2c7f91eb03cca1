"""``tianma memory list|show|forget`` and ``tianma index repair|rebuild``."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tianma.cli.app import (
    HomeOption,
    UserOption,
    console,
    index_app,
    memory_app,
    open_runtime,
    plain,
    settings_from,
)
from tianma.cli.connection import connect, require_no_server
from tianma.cli.home import require_writable
from tianma.errors import InvalidInputError
from tianma.memory import subject_vectors
from tianma.operations import memory as ops
from tianma.settings import Settings, describe_zone
from tianma.storage.records import KINDS, STATUSES, MemoryRecord


def _clip(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def records_table(records: list[MemoryRecord], title: str, zone: tzinfo = UTC) -> Table:
    """A table of records for the terminal, times in ``zone`` (named in the column); ``title`` and
    every cell are printed as they are (no Rich markup)."""
    table = Table(title=escape(title), show_lines=False)
    for col in ("id", "kind", "status", "conf", "hits", f"when ({describe_zone(zone)})", "content"):
        table.add_column(col, overflow="fold" if col == "content" else "ellipsis")
    for r in records:
        when = (r.at or r.created_at).astimezone(zone).strftime("%Y-%m-%d %H:%M")
        table.add_row(
            *plain(r.id[:8], r.kind, r.status, f"{r.confidence:.2f}", r.hit_count, when, _clip(r.content))
        )
    return table


@memory_app.command("list")
def list_memories(
    user: str | None = UserOption,
    kind: str | None = typer.Option(None, help=f"One of: {', '.join(KINDS)}."),
    status: str | None = typer.Option(None, help=f"One of: {', '.join(STATUSES)}."),
    home: Path | None = HomeOption,
) -> None:
    """List what is remembered about a user."""
    if kind is not None and kind not in KINDS:
        raise InvalidInputError(f"--kind must be one of {', '.join(KINDS)}")
    if status is not None and status not in STATUSES:
        raise InvalidInputError(f"--status must be one of {', '.join(STATUSES)}")
    settings = settings_from(home)
    uid = user or settings.user
    with connect(settings, writes=False) as conn:
        records = conn.call(ops.list_memories, uid, kind, status)
    console.print(records_table(records, f"{uid}: {len(records)} records / 条记录", settings.zone))


@memory_app.command("show")
def show_memory(
    record_id: str = typer.Argument(..., help="Record id or a unique prefix of it."),
    user: str | None = UserOption,
    home: Path | None = HomeOption,
) -> None:
    """Show one record with its provenance."""
    settings = settings_from(home)
    with connect(settings, writes=False) as conn:
        r = conn.call(ops.find_record, user or settings.user, record_id)
    console.print(Text.assemble((r.kind, "bold"), f" {r.id}  status={r.status} version={r.version}"))
    console.print(r.content, markup=False)
    rows = {
        "scope": r.scope,
        "key": r.key,
        "tags": ", ".join(r.tags),
        "confidence": f"{r.confidence:.2f}",
        "importance": f"{r.importance:.2f}",
        "hits": r.hit_count,
        "last hit": r.last_hit_at,
        "created": r.created_at,
        "dialogue": r.dialogue_id,
        "speaker": r.speaker,
        "reply": r.reply,
        "source events": ", ".join(r.source_event_ids),
        "source": r.provenance.source,
        "data": {k: v for k, v in (r.data or {}).items() if k not in subject_vectors.FIELDS.values()} or None,  # vectors, not for reading
    }
    for name, value in rows.items():
        if isinstance(value, datetime):
            value = value.astimezone(settings.zone).isoformat(timespec="seconds")
        if value not in (None, ""):
            console.print(f"  {name}: {value}", markup=False)


@memory_app.command("forget")
def forget_memory(
    record_id: str | None = typer.Argument(None, help="Record id (or prefix); omit with --all or --dialogue."),
    everything: bool = typer.Option(False, "--all", help="Forget everything about the user."),
    dialogue: str | None = typer.Option(None, "--dialogue", help="Forget one dialogue (its messages and signals)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    user: str | None = UserOption,
    home: Path | None = HomeOption,
) -> None:
    """Really delete a record, a dialogue or everything about a user, from every file of the home
    (SQL, indexes, windows, spans, chat history; the deleted bytes are overwritten)."""
    if sum((record_id is not None, everything, dialogue is not None)) != 1:
        raise InvalidInputError("give a record id, --dialogue ID, or --all to forget everything about the user")
    settings = settings_from(home)
    uid = user or settings.user
    with connect(settings) as conn:
        target = conn.call(ops.find_record, uid, record_id) if record_id is not None else None
        what = (
            f"record {target.id}" if target is not None
            else f"dialogue {dialogue}" if dialogue is not None
            else f"everything about {uid}"
        )  # fmt: skip
        if not yes and not typer.confirm(f"Really delete {what}? / 确定删除？"):
            raise typer.Abort()
        if dialogue is not None:
            count = conn.call(ops.forget_dialogue, uid, dialogue)
        else:
            count = conn.call(ops.forget, uid, None if target is None else target.id)
    console.print(f"deleted {count} record(s) / 已删除 {count} 条")


@index_app.command("repair")
def repair_index(home: Path | None = HomeOption) -> None:
    """Fix only what `tianma doctor` found: apply the vector outbox, index what an index lacks,
    remove what it holds too many (through a running server too)."""
    settings = settings_from(home)
    with connect(settings) as conn:
        done = conn.call(ops.repair_index)
    console.print(
        f"applied {done.applied} pending vector write(s), indexed {done.indexed}, removed {done.removed} orphan(s)"
        f" / 已应用 {done.applied}，补建 {done.indexed}，移除 {done.removed}"
    )


@index_app.command("rebuild")
def rebuild_index(home: Path | None = HomeOption) -> None:
    """Recreate the vector and keyword indexes from the SQL store (with no server running)."""
    settings = settings_from(home)
    require_no_server(settings, "tianma index rebuild")
    require_writable(settings)
    count = rebuild_with_progress(settings)
    console.print(f"indexed {count} active records / 已索引 {count} 条")


def rebuild_with_progress(settings: Settings) -> int:
    """Recreate the home's indexes from its store under a progress bar; how many records."""
    with (
        open_runtime(settings) as rt,
        Progress(
            TextColumn("indexing / 重建索引"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as bar,
    ):
        task = bar.add_task("rebuild", total=None)
        return rt.rebuild_index(progress=lambda done, total: bar.update(task, completed=done, total=total))
