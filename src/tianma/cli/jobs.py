"""``tianma jobs list | run | due | queue``: the periodic jobs, runnable from cron, and the job table.

``jobs due`` is what an hourly crontab line calls. It first checks the run log (and whether any
dialogue went idle) in SQL only and opens a Runtime (embedder, index) only when some job is
actually due, so the hourly call costs next to nothing on the other hours. Beside a running
``tianma serve`` it asks the server instead (which may have run the jobs itself: every slot is
claimed in SQL, none runs twice). Times are shown in the local zone (``timezone``).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path

import typer
from rich.table import Table

from tianma.cli.app import HomeOption, app, console, plain, settings_from
from tianma.cli.connection import connect
from tianma.cli.worker import QUEUE_HINT
from tianma.errors import InvalidInputError
from tianma.operations import learning as ops
from tianma.scheduler import JobRun, builtin_jobs
from tianma.settings import JOB_NAMES, describe_zone

jobs_app = typer.Typer(
    help="Periodic jobs: idle dialogues end, decay, feedback aggregation, nightly reflection, weekly review "
    "(cron).",
    no_args_is_help=True,
)
app.add_typer(jobs_app, name="jobs")


def _short(at: datetime | None, zone: tzinfo) -> str:
    return "" if at is None else at.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def _print(run: JobRun, zone: tzinfo) -> None:
    style = {"ok": "green", "failed": "red", "skipped": "yellow", "idle": "yellow"}[run.status]
    console.print(run.describe(zone), style=style, markup=False, soft_wrap=True)
    if run.report:
        console.print(f"  {run.report}", markup=False, soft_wrap=True)


@jobs_app.command("list")
def list_jobs(home: Path | None = HomeOption) -> None:
    """Each enabled job: period, next slot, last run and its status."""
    settings = settings_from(home)
    zone = settings.zone
    with connect(settings, writes=False) as conn:
        jobs = conn.call(ops.list_jobs)
    table = Table(title=f"{len(jobs)} job(s) / 个定时任务 · {describe_zone(zone)}")
    for col in ("job", "period", "next", "last run", "status", "error"):
        table.add_column(col, overflow="fold")
    for job in jobs:
        if job.due:
            nxt = "now (due) / 待运行"
        elif job.next_slot is None:
            nxt = "when a dialogue goes idle / 对话空闲时"
        else:
            nxt = _short(job.next_slot, zone)
        last = "never / 从未" if job.last_started_at is None else _short(job.last_started_at, zone)
        table.add_row(*plain(job.name, job.period, nxt, last, job.last_status or "", job.last_error or ""))
    console.print(table)


@jobs_app.command("run")
def run_job(
    name: str = typer.Argument(..., help=f"Job name: {', '.join(JOB_NAMES)}."),
    force: bool = typer.Option(False, "--force", help="Run now even if this period's slot already ran."),
    home: Path | None = HomeOption,
) -> None:
    """Run one job now (only if its current slot has not run, unless --force)."""
    settings = settings_from(home)
    known = [j.name for j in builtin_jobs(settings)]
    if name not in known:
        raise InvalidInputError(
            f"unknown job {name!r} / 没有这个任务; known jobs: {', '.join(known) or 'none'}"
        )
    with connect(settings) as conn:
        run = conn.call(ops.run_job, name, force)
    _print(run, settings.zone)
    if run.status == "failed":
        raise typer.Exit(1)


@jobs_app.command("due")
def run_due(home: Path | None = HomeOption) -> None:
    """Run every job whose current slot has not run yet (call it hourly from cron)."""
    settings = settings_from(home)
    with connect(settings) as conn:
        runs = conn.call(ops.run_due)
    if not runs:
        console.print("nothing due / 没有待运行的任务")
        return
    for run in runs:
        _print(run, settings.zone)
    if any(r.status == "failed" for r in runs):
        raise typer.Exit(1)


@jobs_app.command("queue")
def show_queue(home: Path | None = HomeOption) -> None:
    """The job table (PostgreSQL, or learning.queue = "database"): jobs by kind and status, the last
    failures / 任务队列：按类型与状态统计。"""
    settings = settings_from(home)
    with connect(settings, writes=False) as conn:
        state = conn.call(ops.queue_state)
    if not state.used:
        console.print(*plain(f"this home does not use the job table / 未使用任务队列 — {QUEUE_HINT}"))
    table = Table(title="job table / 任务队列")
    for col in ("kind", "status", "jobs"):
        table.add_column(col)
    for kind, status, n in state.counts:
        table.add_row(*plain(kind, status, str(n)))
    console.print(table)
    for key, when, error in state.failures:
        console.print(*plain(f"failed / 失败 {key} [{when}]: {error}"), style="red", soft_wrap=True)
