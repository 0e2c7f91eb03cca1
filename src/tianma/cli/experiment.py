"""``tianma experiment run | start | stop | status``: variants of the runtime compared with the
baseline — offline on a benchmark, question by question (learning, PrefEval, LoCoMo) or turn by turn (perf), or
online on live traffic, each user (or dialogue) served by one arm."""

from __future__ import annotations

from pathlib import Path

import typer

from tianma.cli.app import HomeOption, app, console, plain, settings_from
from tianma.cli.bench import FullOption, OutOption, QuietOption, ScenariosOption, SmokeOption, context
from tianma.cli.connection import connect

experiment_app = typer.Typer(help="Compare variants of the runtime (node implementations, settings) with paired "
                             "statistics / 对比运行时变体。", no_args_is_help=True)  # fmt: skip
app.add_typer(experiment_app, name="experiment")


@experiment_app.command("run")
def run(
    variant: list[str] = typer.Option([], "--variant", "-v", help="NAME=slot:implementation[,section.name=value…] "
                                      "(repeatable), e.g. mmr=rerank:rerank_mmr or strict=retrieval.min_relevance=0.3"),
    bench: str = typer.Option("learning", "--bench", help="The benchmarks, comma-separated: learning, prefeval, "
                              "locomo, perf (e.g. --bench locomo,perf); one report each."),
    scenarios: Path | None = ScenariosOption,
    out: Path = OutOption,
    smoke: bool = SmokeOption,
    full: bool = FullOption,
    quiet: bool = QuietOption,
) -> None:  # fmt: skip
    """The baseline and each variant on the same data, seed and embedder; per-question pairs, the
    difference with a bootstrap interval, time and token ratios; a Markdown report and JSON."""
    from tianma.experiments import offline
    from tianma.experiments.variants import parse_variant

    variants = [parse_variant(v) for v in variant]
    offline.run_many(context(None, out, smoke, full, quiet), bench, variants, [scenarios] if scenarios else None)


@experiment_app.command("start")
def start(
    name: str = typer.Argument(..., help="The experiment's name (once per home)."),
    arm: list[str] = typer.Option([], "--arm", "-a", help="NAME=slot:implementation[,section.name=value…] "
                                  "(repeatable); the baseline arm is implicit."),
    unit: str = typer.Option("user", "--unit", help="What is assigned to an arm: user or dialogue."),
    home: Path | None = HomeOption,
) -> None:  # fmt: skip
    """Serve each user (or dialogue) by the baseline or one arm, by a stable hash, from the next
    turn on, in every process / 开始在线实验。"""
    from tianma.operations import experiments as ops

    with connect(settings_from(home)) as conn:
        exp = conn.call(ops.start, name, arm, unit)
    arms = ", ".join(["baseline", *exp.arms])
    console.print(*plain(f"experiment {exp.name} started: arms {arms}, by {exp.unit} / 实验已开始"))


@experiment_app.command("stop")
def stop(name: str = typer.Argument(...), home: Path | None = HomeOption) -> None:
    """Stop it: everyone is served by the baseline from the next turn; nothing learnt is lost / 停止实验。"""
    from tianma.operations import experiments as ops

    with connect(settings_from(home)) as conn:
        exp = conn.call(ops.stop, name)
    console.print(*plain(f"experiment {exp.name} stopped / 实验已停止"))


@experiment_app.command("status")
def status(name: str = typer.Argument(...), home: Path | None = HomeOption) -> None:
    """Per arm: units, turns, negative-signal, repeat and memory-use rates with 95 % intervals,
    median latency / 各组结果。"""
    from tianma.experiments.report import describe
    from tianma.operations import experiments as ops

    with connect(settings_from(home), writes=False) as conn:
        report = conn.call(ops.report, name)
    for line in describe(report):
        console.print(*plain(line))
