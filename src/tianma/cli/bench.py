"""``tianma bench``: LoCoMo, PrefEval, performance and learning benchmarks, and ``all`` with a report.

Every benchmark module has the same two functions: ``run(ctx, ...) -> payload`` (runs, prints
its tables, writes its JSON) and ``section(payload, plots) -> markdown`` (the report section,
drawing its PNGs into ``plots``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tianma.cli.app import app

if TYPE_CHECKING:
    from tianma.bench.common import BenchContext

bench_app = typer.Typer(
    help="Benchmarks: public retrieval data side by side with baselines, speed, learning. "
    "Needs: pip install -e '.[bench]'.",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")

DataOption = typer.Option(
    None,
    "--data",
    help="Folder with locomo/ and prefeval/ (default: $TIANMA_EVAL_DATA, ./eval-data, ../shared/eval-data).",
)
OutOption = typer.Option(Path("bench-results"), "--out", help="Results folder (JSON, report.md, plots/).")
SmokeOption = typer.Option(False, "--smoke", help="Tiny run that checks the benchmark works (CI).")
FullOption = typer.Option(False, "--full", help="Full run (longer than the quick default).")
QuietOption = typer.Option(False, "--quiet", help="No progress bars.")
ScenariosOption = typer.Option(
    None, "--scenarios", help="Learning scenario file (JSON; format in the bundled scenarios README)."
)


def context(data: Path | None, out: Path, smoke: bool, full: bool, quiet: bool) -> BenchContext:
    """The run's context from the shared options."""
    from tianma.bench.common import BenchContext, find_data
    from tianma.errors import InvalidInputError

    if smoke and full:
        raise InvalidInputError("--smoke and --full exclude each other / 不能同时使用")
    mode = "smoke" if smoke else "full" if full else "quick"
    return BenchContext(data=find_data(data), out=out, mode=mode, show_progress=not quiet)


def _dataset_command(name: str, summary: str, module: str | None = None) -> None:
    """Register ``tianma bench <name>`` with the shared options (one body for every benchmark);
    ``module``: for a benchmark that is not part of ``tianma bench all``."""

    def command(
        data: Path | None = DataOption,
        out: Path = OutOption,
        smoke: bool = SmokeOption,
        full: bool = FullOption,
        quiet: bool = QuietOption,
    ) -> None:
        import importlib

        from tianma.bench import report

        bench = importlib.import_module(module) if module else report.module(name)
        bench.run(context(data, out, smoke, full, quiet))

    command.__doc__ = summary
    bench_app.command(name)(command)


_dataset_command(
    "locomo", "LoCoMo retrieval (R@5/R@10, any/all, session recall) for tianma and the baselines."
)
_dataset_command(
    "prefeval", "PrefEval preference recall (hit@5/hit@10) after 0, 100 and 300 distractor exchanges."
)
_dataset_command("perf", "Speed and size: turn overhead, ingest throughput, rebuild, memory tokens per turn.")
_dataset_command("serve", "tianma serve: overhead per turn, first-token delay of streaming, throughput under load.")
_dataset_command(
    "vectors",
    "Vector index layouts (Qdrant Edge): shared vs per-user shard search, upsert, compact, vs local mode.",
)


_dataset_command(
    "import",
    "tianma import of a synthetic 10k-message ChatGPT history: time per step against the 10-minute target, "
    "how much becomes memory.",
    module="tianma.bench.importing",
)
_dataset_command(
    "keyword",
    "Keyword channel: SQLite FTS5 vs Qdrant Edge sparse vectors — LoCoMo recall, latency, size.",
    module="tianma.bench.keyword",
)


@bench_app.command("learning")
def learning(
    scenarios: Path | None = ScenariosOption,
    out: Path = OutOption,
    smoke: bool = SmokeOption,
    full: bool = FullOption,
    quiet: bool = QuietOption,
    model: str = typer.Option(
        "broken", "--model", help="What answers reflection prompts: broken (only the rules learn), oracle "
        "(the scenario's truth names superseded statements: what the model half can add at best) or "
        "noisy-oracle (the same plus random wrong pairs)."
    ),
) -> None:
    """ "It gets better with use": hit rate of no memory / memory / memory + reflection over turns."""
    from tianma.bench import learning as bench

    models: dict[str, bench.Model] = {"broken": "broken", "oracle": "oracle", "noisy-oracle": "noisy-oracle"}
    if model not in models:
        raise typer.BadParameter(f"--model must be one of {', '.join(models)}, got {model!r}")
    bench.run(context(None, out, smoke, full, quiet), scenarios=scenarios, model=models[model])


@bench_app.command("all")
def run_all(
    data: Path | None = DataOption,
    out: Path = OutOption,
    smoke: bool = SmokeOption,
    full: bool = FullOption,
    quiet: bool = QuietOption,
    scenarios: Path | None = ScenariosOption,
    readme: Path | None = typer.Option(
        None, "--readme", help="Also rewrite this README's results block (between its bench markers)."
    ),
) -> None:
    """Every benchmark, then one Markdown report with plots (``<out>/report.md``)."""
    from tianma.bench import report

    ctx = context(data, out, smoke, full, quiet)
    path, failures = report.run_all(ctx, scenarios=scenarios)
    if readme is not None and not failures:
        report.update_readme(readme, path)
    if failures:
        raise typer.Exit(code=1)


@bench_app.command("report")
def rerender(
    out: Path = OutOption,
    readme: Path | None = typer.Option(None, "--readme", help="Also rewrite this README's results block."),
) -> None:
    """Re-render ``<out>/report.md`` (and the README block) from the last ``all`` run's JSON files."""
    from tianma.bench import report
    from tianma.bench.common import BenchContext

    path = report.rerender(BenchContext(data=None, out=out))
    if readme is not None:
        report.update_readme(readme, path)
