"""``tianma bench all``: every benchmark in one run, one Markdown report, optionally the README.

The README's results live between two markers and are rewritten from the report, so no number
in them is typed by hand; the plots are copied next to it (``docs/bench/``) so they render.
"""

from __future__ import annotations

import importlib
import shutil
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from tianma.bench.common import BenchContext, console, describe_machine, machine_info, versions, write_json
from tianma.errors import InvalidInputError

BENCHMARKS = {
    "locomo": "tianma.bench.locomo_cli",
    "prefeval": "tianma.bench.prefeval",
    "perf": "tianma.bench.perf",
    "learning": "tianma.bench.learning",
    "serve": "tianma.bench.serve",
    "vectors": "tianma.bench.vectors",
}
BEGIN = "<!-- bench:begin (written by `tianma bench all --readme`; do not edit by hand) -->"
END = "<!-- bench:end -->"
README_PLOTS = Path("docs") / "bench"


def module(name: str) -> ModuleType:
    return importlib.import_module(BENCHMARKS[name])


def run_all(
    ctx: BenchContext, scenarios: Path | None = None, only: tuple[str, ...] = ()
) -> tuple[Path, dict[str, str]]:
    """Run the benchmarks (all, or ``only``); returns the report's path and the failures by name.

    A benchmark that fails is reported as failed and the others still run.
    """
    payloads: dict[str, dict[str, Any]] = {}
    failures: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for name in only or tuple(BENCHMARKS):
        console.rule(f"tianma bench {name} ({ctx.mode})")
        started = time.perf_counter()
        try:
            mod = module(name)
            payloads[name] = mod.run(ctx, scenarios=scenarios) if name == "learning" else mod.run(ctx)
        except Exception as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"
            console.print(f"[red]{name} failed:[/] {failures[name]}")
            console.print(traceback.format_exc(), markup=False, style="dim")
        seconds[name] = round(time.perf_counter() - started, 1)
    return write_report(ctx, payloads, failures, seconds), failures


def write_report(
    ctx: BenchContext,
    payloads: dict[str, dict[str, Any]],
    failures: dict[str, str],
    seconds: dict[str, float],
) -> Path:
    """``report.md`` (and ``report.json``, an index of the result files) in the results folder."""
    first = next(iter(payloads.values()), {})  # the run's own facts (a re-render keeps them)
    info, vers = first.get("machine") or machine_info(), first.get("versions") or versions()
    total = sum(seconds.values())
    lines = [
        "# tianma benchmark report",
        "",
        f"Run {ctx.started.strftime('%Y-%m-%d %H:%M UTC')} · mode **{ctx.mode}** · "
        f"`tianma bench all{'' if ctx.mode == 'quick' else ' --' + ctx.mode}` · {total / 60:.1f} min in all "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in seconds.items())})",
        "",
        f"Machine: {describe_machine(info)}. Commit `{vers.get('git_commit', 'unknown')[:12]}`"
        f" (src {vers.get('src_uncommitted_diff_sha256', '?')}).",
        "",
    ]
    for name, reason in failures.items():
        lines += [f"**{name} failed:** `{reason}`", ""]
    for name, payload in payloads.items():
        lines += [module(name).section(payload, ctx.plots), ""]
    path = ctx.out / "report.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    write_json(
        ctx.out / "report.json",
        {
            "date": ctx.started.isoformat(timespec="seconds"),
            "mode": ctx.mode,
            "seconds": seconds,
            "failures": failures,
            "results": {name: p.get("file") for name, p in payloads.items()},
        },
    )
    console.print(f"report: {path}")
    return path


def rerender(ctx: BenchContext) -> Path:
    """Write ``report.md`` again from the results of the last ``all`` run in ``ctx.out``.

    For a change in how results are presented: the numbers are the ones that run wrote.

    Raises:
        InvalidInputError: no ``report.json`` there, or a result file it names is gone.
    """
    import json
    from datetime import datetime

    index_path = ctx.out / "report.json"
    if not index_path.is_file():
        raise InvalidInputError(f"{index_path}: no earlier run to re-render / 没有可重新生成的结果")
    index = json.loads(index_path.read_text(encoding="utf-8"))
    payloads = {}
    for name, file in index["results"].items():
        path = Path(file or "")
        if not file or not path.is_file():
            raise InvalidInputError(f"{path}: result file missing / 结果文件缺失")
        payloads[name] = json.loads(path.read_text(encoding="utf-8")) | {"file": str(path)}
    again = BenchContext(
        data=ctx.data, out=ctx.out, mode=index["mode"], started=datetime.fromisoformat(index["date"])
    )
    return write_report(again, payloads, index["failures"], index["seconds"])


def update_readme(readme: Path, report: Path) -> None:
    """Replace the README's results block with the report (headings one level down), plots copied.

    Raises:
        InvalidInputError: the README has no results markers.
    """
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise InvalidInputError(f"{readme}: no results markers ({BEGIN} … {END}) / README 缺少结果标记")
    body = report.read_text(encoding="utf-8")
    body = "\n".join(("#" + line if line.startswith("#") else line) for line in body.splitlines()[1:]).strip()
    target = readme.parent / README_PLOTS
    target.mkdir(parents=True, exist_ok=True)
    for png in sorted((report.parent / "plots").glob("*.png")):
        shutil.copy2(png, target / png.name)
    body = body.replace("](plots/", f"]({README_PLOTS.as_posix()}/")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n\n{body}\n\n{END}{tail}", encoding="utf-8")
    console.print(f"README results updated: {readme}")
