"""``tianma worker``: take queued jobs from the store's job table — reflections, decay, feedback
aggregation, weekly reviews and queued imports — beside one or more ``tianma serve`` processes
on PostgreSQL, as many workers as the machines have room for."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

import typer

from tianma.cli.app import HomeOption, app, console, open_runtime, settings_from
from tianma.errors import ConfigError
from tianma.storage import job_queue

QUEUE_HINT = (
    "the job table is used when sql.url is PostgreSQL or learning.queue = \"database\"; on SQLite `tianma serve` "
    "runs its reflections itself / 任务表仅在 PostgreSQL 或 learning.queue = \"database\" 时使用"
)


@app.command("worker")
def worker(
    home: Path | None = HomeOption,
    once: bool = typer.Option(False, "--once", help="Run the jobs due now, then exit (cron) / 只运行当前到期的任务。"),
) -> None:
    """Take queued jobs (reflections, decay, aggregation, weekly reviews, imports) from the store's job
    table until stopped (SIGTERM, Ctrl-C) / 处理任务队列。"""
    settings = settings_from(home)
    with open_runtime(settings) as rt:
        if not rt.job_table:
            raise ConfigError(f"tianma worker: nothing to take — {QUEUE_HINT}")
        jobs = rt.queue_worker("worker")
        if once:
            ran = jobs.drain()
            left = job_queue.counts(rt.store.engine).get("pending", 0)
            console.print(f"{ran} job(s) run, {left} waiting / 已运行 {ran} 个任务，{left} 个等待中", markup=False)
            return

        def stop(_signum: int, _frame: FrameType | None) -> None:
            jobs.close(timeout=0)

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        console.print(f"worker {jobs.name}: taking jobs / 正在处理任务", markup=False)
        try:
            jobs.run_forever()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
