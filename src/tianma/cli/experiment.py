"""``tianma experiment run``: variants of the runtime compared with the baseline on a benchmark,
question by question (issue #18; offline, learning benchmark only so far)."""

from __future__ import annotations

from pathlib import Path

import typer

from tianma.cli.app import app
from tianma.cli.bench import FullOption, OutOption, QuietOption, ScenariosOption, SmokeOption, context

experiment_app = typer.Typer(help="Compare variants of the runtime (node implementations, settings) with paired "
                             "statistics / 对比运行时变体。", no_args_is_help=True)  # fmt: skip
app.add_typer(experiment_app, name="experiment")


@experiment_app.command("run")
def run(
    variant: list[str] = typer.Option([], "--variant", "-v", help="NAME=slot:implementation[,section.name=value…] "
                                      "(repeatable), e.g. mmr=rerank:rerank_mmr or strict=retrieval.min_relevance=0.3"),
    bench: str = typer.Option("learning", "--bench", help="The benchmark: learning (the others are not wired yet)."),
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
    offline.run(context(None, out, smoke, full, quiet), bench, variants, [scenarios] if scenarios else None)
