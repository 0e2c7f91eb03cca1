"""``tianma reflect [undo]``, ``tianma maintain``, ``tianma memory history``, ``tianma strategies``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tianma.cli.app import (
    AllUsersOption,
    HomeOption,
    UserOption,
    app,
    console,
    memory_app,
    plain,
    settings_from,
)
from tianma.cli.connection import connect
from tianma.cli.memory import records_table
from tianma.operations import learning as learning_ops
from tianma.operations import memory as memory_ops
from tianma.results import ReflectionReport

reflect_app = typer.Typer(help="Reflect on recent messages: learn facts, preferences, strategies.",
                          invoke_without_command=True)  # fmt: skip
strategies_app = typer.Typer(help="Learnt strategies.", no_args_is_help=True)
app.add_typer(reflect_app, name="reflect")
app.add_typer(strategies_app, name="strategies")


def report_table(report: ReflectionReport) -> Table:
    """What one reflection run did, item by item."""
    table = Table(
        title=escape(f"run {report.run_id} — user {report.user_id}") + (" (dry run)" if report.dry_run else "")
    )
    for col in ("outcome", "kind", "content", "confidence", "why"):
        table.add_column(col, overflow="fold")
    for item in report.items:
        conf = item.confidence
        table.add_row(*plain(item.outcome, item.kind or "", item.content or "",
                             "" if conf is None else f"{conf:.2f}", item.reason or ""))  # fmt: skip
    return table


@reflect_app.callback()
def reflect(
    ctx: typer.Context,
    user: str | None = AllUsersOption,
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change; write nothing."),
    home: Path | None = HomeOption,
) -> None:
    """Reflect on every user's messages since the last reflection (the nightly batch)."""
    if ctx.invoked_subcommand is not None:
        return
    settings = settings_from(home)
    with connect(settings) as conn:
        reports = conn.call(learning_ops.reflect, user, dry_run, "nightly" if user is None else "manual")
    for report in reports:
        console.print(report_table(report))
        llm = report.llm
        if llm.get("called") and llm.get("dropped"):
            console.print(
                Text(
                    f"LLM output dropped ({llm.get('error')}); rule-based extraction was used", style="yellow"
                )
            )
        elif llm.get("skipped"):
            console.print(
                f"LLM not asked: {llm['skipped']} / 未调用大模型（规则已足够或未到调用间隔）", markup=False
            )
    if not reports:
        console.print("nothing to reflect on / 没有新的对话")


@reflect_app.command("undo")
def undo(
    run_id: str = typer.Argument(..., help="The run id a reflection printed."), home: Path | None = HomeOption
) -> None:
    """Undo one whole reflection (or maintenance) run, restoring everything it changed."""
    settings = settings_from(home)
    with connect(settings) as conn:
        restored = conn.call(learning_ops.undo_reflection, run_id)
    console.print(f"restored {len(restored)} record(s) / 已恢复 {len(restored)} 条")


@app.command()
def maintain(home: Path | None = HomeOption) -> None:
    """Forgetting: idle learnt memories lose confidence; weak ones become inactive (restorable)."""
    settings = settings_from(home)
    with connect(settings) as conn:
        reports = conn.call(learning_ops.maintain)
    for r in reports:
        console.print(
            f"{r.user_id}: {len(r.decayed)} decayed, {len(r.inactive)} inactive (run {r.run_id})", markup=False
        )
        for ab in r.ab:
            console.print(f"  A/B: {ab.reason}", markup=False)
    if not reports:
        console.print("nothing to decay / 无需衰减")


@memory_app.command("history")
def history(
    record_id: str = typer.Argument(..., help="Record id or a unique prefix."),
    user: str | None = UserOption,
    home: Path | None = HomeOption,
) -> None:
    """Every version of a record, with the reason and evidence of each change."""
    settings = settings_from(home)
    with connect(settings, writes=False) as conn:
        record = conn.call(memory_ops.find_record, user or settings.user, record_id)
        versions = conn.call(memory_ops.history, record.id)
    table = Table(title=escape(f"history of {record.id}"))
    for col in ("version", "status", "conf", "content", "changed because", "evidence", "run"):
        table.add_column(col, overflow="fold")
    for v in versions:
        table.add_row(*plain(str(v.version) + (" (current)" if v.current else ""), v.status,
                             f"{v.confidence:.2f}", v.content, v.change_reason or "",
                             ", ".join(e[:8] for e in v.change_evidence), (v.run_id or "")[:8]))  # fmt: skip
    console.print(table)


@strategies_app.command("list")
def list_strategies(user: str | None = UserOption, home: Path | None = HomeOption) -> None:
    """Learnt strategies of a user, with status and confidence."""
    settings = settings_from(home)
    uid = user or settings.user
    with connect(settings, writes=False) as conn:
        records = conn.call(memory_ops.list_memories, uid, kind="strategy")
    console.print(records_table(records, f"{uid}: {len(records)} strategies / 条策略", settings.zone))


@strategies_app.command("show")
def show_strategy(
    record_id: str = typer.Argument(...), user: str | None = UserOption, home: Path | None = HomeOption
) -> None:
    """One strategy: trigger, action, weight, priority, provenance."""
    settings = settings_from(home)
    with connect(settings, writes=False) as conn:
        r = conn.call(memory_ops.find_record, user or settings.user, record_id)
    console.print(
        Text.assemble(
            ("strategy", "bold"),
            f" {r.id} status={r.status} confidence={r.confidence:.2f} version={r.version}",
        )
    )
    console.print(f"  action: {r.content}", markup=False)
    for name in ("trigger", "priority", "weight", "zone", "stats", "rollout", "guard", "support"):
        if name in r.data:
            console.print(f"  {name}: {r.data[name]}", markup=False)
    console.print(f"  events: {', '.join(r.provenance.event_ids)}", markup=False)
    console.print(f"  reflections: {', '.join(r.provenance.reflection_ids)}", markup=False)
