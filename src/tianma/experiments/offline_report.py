"""The report of an offline experiment: a Markdown table and a forest plot of the differences.

A comparison row is ``payload["comparisons"][variant][scope][metric]`` (a paired difference:
``baseline``, ``variant``, ``difference``, ``low``, ``high``, ``real``) and
``payload["comparisons"][variant]["ratios"]`` (``seconds``, ``prompt_tokens`` and, where each unit
was timed, ``latency``: a paired ratio with its interval). Metrics named in ``payload["counts"]``
are per-unit amounts (tokens, memories), shown as numbers; the others are rates, in points.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

RATIOS = "ratios"
CATEGORY = " · "
"""Joins a split and a category in a scope's name (``test · multi-hop``)."""


def rows(payload: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """``(variant, scope, metric, difference)`` for every paired difference, in report order."""
    return [(name, scope, metric, d) for name, scopes in payload["comparisons"].items()
            for scope, metrics in scopes.items() if scope != RATIOS for metric, d in metrics.items()]  # fmt: skip


def latency_ratios(payload: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(variant, paired latency ratio)`` for the variants whose units were timed one by one."""
    return [(name, scopes[RATIOS]["latency"]) for name, scopes in payload["comparisons"].items()
            if scopes[RATIOS].get("latency")]  # fmt: skip


def plot(payload: dict[str, Any], path: Path) -> Path:
    """Each variant's difference to the baseline with its 95 % interval, one row per split (the
    categories are in the table) and metric (filled: real; hollow: the interval holds zero);
    below, the latency ratios on a log scale when the units were timed."""
    from tianma.bench.plotting import pyplot, save

    counts = set(payload.get("counts", ()))
    shown = [(f"{n} · {s} · {m}", m, d) for n, s, m, d in rows(payload) if CATEGORY not in s]
    panels = [
        ("variant − baseline (points), 95 % paired-bootstrap interval",
         [(label, d) for label, m, d in shown if m not in counts], 100.0, "difference", 0.0),
        ("variant − baseline (per unit), 95 % interval",
         [(label, d) for label, m, d in shown if m in counts], 1.0, "difference", 0.0),
        ("latency, variant ÷ baseline (log scale), 95 % interval",
         [(f"{n} · latency", d) for n, d in latency_ratios(payload)], 1.0, "ratio", 1.0),
    ]  # fmt: skip
    panels = [p for p in panels if p[1]]
    plt = pyplot()
    heights = [0.35 * len(p[1]) + 0.9 for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, sum(heights) + 0.4), squeeze=False,
                             gridspec_kw={"height_ratios": heights})  # fmt: skip
    for ax, (label, items, scale, key, none) in zip(axes[:, 0], panels, strict=True):
        for y, (_, d) in enumerate(items):
            x = scale * d[key]
            ax.errorbar(x, y, xerr=[[x - scale * d["low"]], [scale * d["high"] - x]], fmt="o", color="black",
                        mfc="black" if d["real"] else "white", capsize=3)  # fmt: skip
        ax.axvline(none, color="grey", linewidth=0.8)
        if key == "ratio":
            ax.set_xscale("log")
        ax.set_yticks(range(len(items)), [name for name, _ in items])
        ax.invert_yaxis()
        ax.set_xlabel(label)
    axes[0, 0].set_title(f"tianma experiment · {payload['bench']} ({payload['mode']})")
    return save(fig, path)


def markdown(payload: dict[str, Any]) -> str:
    """The report: one row per variant, scope and metric — the difference, its interval, and
    whether it is real (the interval excludes zero); then time and prompt tokens as ratios."""
    counts = set(payload.get("counts", ()))
    lines = [
        f"# Experiment — {payload['bench']} benchmark ({payload['arm']}), {payload['date']}", "",
        f"![differences with 95 % intervals](plots/{Path(payload['plot']).name})", "",
        f"Mode `{payload['mode']}`; paired bootstrap over units (95 % interval); a difference is **real** "
        "when its interval excludes zero (a ratio: excludes 1). Baseline = the runtime as configured.", "",
        "| variant | items | scope | metric | baseline | variant | difference | 95 % interval | real |",
        "|---|---|---|---|---:|---:|---:|---|---|",
    ]  # fmt: skip
    for name, scope, metric, d in rows(payload):
        items = ", ".join(payload["variants"][name]["items"])
        scale, unit = (1.0, "") if metric in counts else (100.0, " %")
        lines.append(f"| {name} | `{items}` | {scope} | {metric} | {scale * d['baseline']:.1f}{unit} | "
                     f"{scale * d['variant']:.1f}{unit} | {scale * d['difference']:+.1f} | "
                     f"[{scale * d['low']:+.1f}, {scale * d['high']:+.1f}] | {'yes' if d['real'] else 'no'} |")  # fmt: skip
    lines += ["", "| variant | latency per unit (median ms, baseline → variant) | ratio | 95 % interval | real "
              "| whole-run time | prompt tokens |", "|---|---|---:|---|---|---:|---:|"]  # fmt: skip
    for name, scopes in payload["comparisons"].items():
        r = scopes[RATIOS]
        tokens = "—" if r["prompt_tokens"] is None else f"{r['prompt_tokens']:.2f}×"
        lat = r.get("latency")
        if lat:
            cells = (f"{lat['baseline_ms']:.2f} → {lat['variant_ms']:.2f}", f"{lat['ratio']:.2f}×",
                     f"[{lat['low']:.2f}, {lat['high']:.2f}]", "yes" if lat["real"] else "no")  # fmt: skip
        else:
            cells = ("not timed per unit", "—", "—", "—")
        lines.append(f"| {name} | {' | '.join(cells)} | {r['seconds']:.2f}× | {tokens} |")
    return "\n".join(lines) + "\n"
