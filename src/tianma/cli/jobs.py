"""``tianma jobs list | run | due``: the periodic jobs, runnable from cron.

``jobs due`` is what an hourly crontab line calls. It first checks the run log (and whether any
dialogue went idle) with a bare SQL engine and only opens a Runtime (embedder, index) when some
job is actually due, so the hourly call costs next to nothing on the other hours. Times are
shown in the local zone (``timezone``).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path

import typer
from rich.table import Table
from sqlalchemy import Engine

from tianma.cli.app import HomeOption, app, console, open_runtime, settings_from
from tianma.errors import InvalidInputError
from tianma.memory import job_runs
from tianma.memory.schema import utcnow
from tianma.memory.sql_store import create_sql_engine
from tianma.scheduler import JobRun, Scheduler, builtin_jobs, due_jobs, is_due, next_slot
from tianma.settings import JOB_NAMES, Settings, describe_zone

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


def _engine(settings: Settings) -> Engine:
    settings.home.expanduser().mkdir(parents=True, exist_ok=True)
    return create_sql_engine(settings.sql_url)


@jobs_app.command("list")
def list_jobs(home: Path | None = HomeOption) -> None:
    """Each enabled job: period, next slot, last run and its status."""
    settings = settings_from(home)
    jobs = builtin_jobs(settings)
    zone = settings.zone
    engine = _engine(settings)
    now = utcnow()
    table = Table(title=f"{len(jobs)} job(s) / 个定时任务 · {describe_zone(zone)}")
    for col in ("job", "period", "next", "last run", "status", "error"):
        table.add_column(col, overflow="fold")
    try:
        for job in jobs:
            if is_due(engine, job, now):
                nxt = "now (due) / 待运行"
            elif job.period == "continuous":
                nxt = "when a dialogue goes idle / 对话空闲时"
            else:
                nxt = _short(next_slot(job, now), zone)
            last = job_runs.last_run(engine, job.name)
            table.add_row(job.name, job.period, nxt, _short(last["started_at"], zone) if last else "never / 从未",
                          last["status"] if last else "", (last or {}).get("error") or "")  # fmt: skip
    finally:
        engine.dispose()
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
    with open_runtime(settings) as rt:
        run = Scheduler(rt).run(name, force=force)
    _print(run, settings.zone)
    if run.status == "failed":
        raise typer.Exit(1)


@jobs_app.command("due")
def run_due(home: Path | None = HomeOption) -> None:
    """Run every job whose current slot has not run yet (call it hourly from cron)."""
    settings = settings_from(home)
    jobs = builtin_jobs(settings)
    engine = _engine(settings)
    try:
        due = due_jobs(engine, jobs, utcnow())
    finally:
        engine.dispose()
    if not due:
        console.print("nothing due / 没有待运行的任务")
        return
    with open_runtime(settings) as rt:
        runs = Scheduler(rt, tuple(j for j, _ in due)).run_due()
    for run in runs:
        _print(run, settings.zone)
    if any(r.status == "failed" for r in runs):
        raise typer.Exit(1)
