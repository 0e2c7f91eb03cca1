"""``tianma review`` (the queue of learnt changes waiting for a human) and strategy rollback/conflicts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from tianma.cli.app import AllUsersOption, HomeOption, UserOption, app, console, plain, settings_from
from tianma.cli.connection import connect
from tianma.cli.learning import strategies_app
from tianma.operations import memory as ops

review_app = typer.Typer(
    help="Learnt changes waiting for a human: list, approve, reject. / 待审核的学习结果",
    invoke_without_command=True,
)
app.add_typer(review_app, name="review")


def _preview(preview: Mapping[str, Any]) -> str:
    before = "; ".join(preview.get("before") or []) or "—"
    after = "; ".join(preview.get("after") or []) or "—"
    return f"before: {before}\nafter: {after}"


@review_app.callback()
def review(
    ctx: typer.Context,
    user: str | None = AllUsersOption,
    show_all: bool = typer.Option(False, "--all", help="Also decided and rejected ones."),
    home: Path | None = HomeOption,
) -> None:
    """List the pending changes with their zone, why they wait, a before/after preview and evidence."""
    if ctx.invoked_subcommand is not None:
        return
    with connect(settings_from(home), writes=False) as conn:
        rows = conn.call(ops.list_reviews, user, None if show_all else "pending")
    table = Table(title=f"{len(rows)} review(s) / 条待审核" if not show_all else f"{len(rows)} review(s)")
    for col in ("id", "user", "status", "kind", "zone", "content", "why", "preview", "evidence"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(*plain(r.id[:8], r.user_id, r.status, r.kind, r.zone, r.content, r.reason,
                             _preview(r.preview), ", ".join(e[:8] for e in r.evidence)))  # fmt: skip
    console.print(table)


def _decide(review_id: str, reason: str, home: Path | None, approve: bool) -> None:
    with connect(settings_from(home)) as conn:
        done = conn.call(ops.decide_review, review_id, reason, approve)
    label = "approved / 已批准" if approve else "rejected / 已拒绝"
    console.print(f"{label}: {done.content} (run {done.run_id})", markup=False)


ReviewId = typer.Argument(..., help="Review id or a unique prefix.")
Reason = typer.Option("", "--reason", help="Why (kept in the record's history).")


@review_app.command("approve")
def approve(review_id: str = ReviewId, reason: str = Reason, home: Path | None = HomeOption) -> None:
    """Apply a pending change (versioned; `tianma reflect undo RUN` reverts it)."""
    _decide(review_id, reason, home, approve=True)


@review_app.command("reject")
def reject(review_id: str = ReviewId, reason: str = Reason, home: Path | None = HomeOption) -> None:
    """Refuse a pending change (its record is disabled, with the reason)."""
    _decide(review_id, reason, home, approve=False)


@strategies_app.command("rollback")
def rollback(
    record_id: str = typer.Argument(..., help="Strategy id or a unique prefix."),
    to: int | None = typer.Option(None, "--to", help="Version to restore (default: the previous one)."),
    user: str | None = UserOption,
    home: Path | None = HomeOption,
) -> None:
    """Restore a strategy as it was at an earlier version (a new version; undoable)."""
    settings = settings_from(home)
    with connect(settings) as conn:
        record = conn.call(ops.find_record, user or settings.user, record_id)
        done = conn.call(ops.rollback, record.id, to)
    console.print(f"{record.id}: version {done.restored_version} restored as version {done.version} "
                  f"(run {done.run_id})", markup=False)  # fmt: skip


@strategies_app.command("conflicts")
def conflicts(user: str | None = UserOption, home: Path | None = HomeOption) -> None:
    """Active strategies with the same trigger and scope, opposite actions and equal priority
    (both are disabled on every turn they would apply until one is changed)."""
    settings = settings_from(home)
    uid = user or settings.user
    with connect(settings, writes=False) as conn:
        found = conn.call(ops.strategy_conflicts, uid)
        contents = {r.id: r.content for r in conn.call(ops.list_memories, uid, kind="strategy")}
    if not found:
        console.print("no conflicts / 没有冲突")
        return
    table = Table(title=escape(f"{uid}: {len(found)} conflict(s) / 处冲突"))
    for col in ("a", "b", "why"):
        table.add_column(col, overflow="fold")
    for c in found:
        table.add_row(
            *plain(
                f"{c.a_id[:8]} {contents.get(c.a_id, '')}",
                f"{c.b_id[:8]} {contents.get(c.b_id, '')}",
                c.reason,
            )
        )
    console.print(table)
