"""The performance suite's tables (terminal and Markdown from the same rows), verdicts and plots.

Every table is built once as header + rows of strings, so what the terminal shows and what the
report says cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

Rows = tuple[list[str], list[list[str]]]


def _n(size: int) -> str:
    return f"{size // 1000}k" if size >= 1000 and size % 1000 == 0 else str(size)


def _yes(met: bool | None) -> str:
    return "—" if met is None else ("yes" if met else "no")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def overhead_rows(payload: dict[str, Any]) -> Rows:
    cols = ["memories", "runs × turns", "p50 ms", "p95 ms", "p50 spread", "p95 spread", "min", "max"]
    rows = []
    for s in payload["sizes"]:
        o, pooled = s["overhead_ms"], s["overhead_ms"]["pooled"]
        target = s["target_p95_ms"]
        rows.append(
            [
                f"{s['size']:,}",
                f"{len(s['runs'])} × {s['runs'][0]['turns']}",
                *(f"{o[k]:.1f}" for k in ("p50", "p95", "p50_spread", "p95_spread")),
                f"{pooled['min']:.1f}",
                f"{pooled['max']:.1f}",
                "—" if target is None else f"≤ {target:.0f}",
                _yes(s["target_met"]),
                *_ratio_cells(s),
            ]
        )
    return [*cols, "target p95", "met", "query embed p50", "p95 ÷ embed", "target", "met"], rows


def _ratio_cells(s: dict[str, Any]) -> list[str]:
    """The overhead against the embedder's own query time in the same run (older files lack it)."""
    if "overhead_ratio" not in s:
        return ["—"] * 4
    target = s["target_ratio"]
    return [f"{s['embedder_query_ms']['p50']:.1f} ms", f"{s['overhead_ratio']:.2f}×",
            "—" if target is None else f"≤ {target:.1f}×", _yes(s["ratio_met"])]  # fmt: skip


def node_rows(payload: dict[str, Any]) -> Rows:
    sizes = payload["sizes"]
    names = list(sizes[0]["nodes_ms"]) if sizes else []
    rows = [[name, *(f"{s['nodes_ms'][name]['p50']:.2f}" for s in sizes)] for name in names]
    return ["p50 ms by node", *(f"{s['size']:,}" for s in sizes)], rows


def ingest_rows(payload: dict[str, Any]) -> Rows:
    cols = ["store", "texts × reps", "embedder ev/s", "ingest ev/s", "ratio", "ratio spread"]
    cols += ["embedding share", "other ms/event", "target", "met"]
    rows = []
    for r in payload["ingest"]:
        rows.append(
            [
                "empty" if r["store"] == 0 else f"{r['store']:,}",
                f"{r['texts']} × {r['repetitions']}",
                f"{r['embedder_events_per_s']['p50']:.1f}",
                f"{r['ingest_events_per_s']['p50']:.1f}",
                f"{r['ratio']['p50']:.2f}" + ("" if r["ratio_paired"] else "*"),
                f"{r['ratio']['spread']:.2f}",
                f"{100 * r['embedding_share_of_ingest']['p50']:.0f} %",
                f"{r['non_embedding_ms_per_event']['p50']:.2f}",
                f"≥ {r['target_ratio']:.2f}",
                _yes(r["target_met"]),
            ]
        )
    return cols, rows


def rebuild_rows(payload: dict[str, Any]) -> Rows:
    cols = ["memories", "records", "seconds", "records/s", "embedding share"]
    extra = sorted({int(k) for r in payload["rebuild"] for k in r["extrapolated_s"]})
    rows = [
        [
            f"{r['size']:,}",
            f"{r['records']:,}",
            f"{r['seconds']:.1f}",
            f"{r['records_per_s']:.1f}",
            "—" if r["embedding_share"] is None else f"{100 * r['embedding_share']:.0f} %",
            *(_duration(r["extrapolated_s"].get(str(n), 0.0)) for n in extra),
        ]
        for r in payload["rebuild"]
    ]
    return [*cols, *(f"≈ at {_n(n)}" for n in extra)], rows


def token_rows(payload: dict[str, Any]) -> Rows:
    cols = ["memories", "memory p50", "memory p95", "memory max", "whole prompt p50", "full context p50"]
    cols += ["memory ÷ full", "target", "met"]
    rows = []
    for s in payload["sizes"]:
        t = s["tokens"]
        share = t["memory_share_of_full"]
        rows.append(
            [
                f"{s['size']:,}",
                *(f"{t['memory'][k]:.0f}" for k in ("p50", "p95", "max")),
                f"{t['prompt']['p50']:.0f}",
                f"{t['full_context']['p50']:,.0f}",
                "—" if share is None else f"1/{1 / share:,.0f}" if share else "0",
                f"≤ {payload['targets']['memory_tokens_per_turn']} (p95)",
                _yes(s["tokens_target_met"]),
            ]
        )
    return cols, rows


def _rich(title: str, rows: Rows) -> Table:
    cols, body = rows
    table = Table(title=title)
    for i, col in enumerate(cols):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in body:
        table.add_row(*row)
    return table


def _markdown(rows: Rows) -> list[str]:
    cols, body = rows
    lines = ["| " + " | ".join(cols) + " |", "|---" + "|---:" * (len(cols) - 1) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def tables(payload: dict[str, Any]) -> list[Table]:
    """The terminal tables of one run."""
    out = [
        _rich(
            "tianma memory overhead per chat turn (ms, chat model excluded; medians of runs)",
            overhead_rows(payload),
        ),
        _rich("where the time goes (p50 ms; embeddings are inside their node's time)", node_rows(payload)),
        _rich("batch ingest: Runtime.ingest vs the embedder alone on the same texts", ingest_rows(payload)),
        _rich("memory-block tokens per turn (cl100k) vs a full-context prompt", token_rows(payload)),
    ]
    if payload["rebuild"]:
        out.append(_rich("index rebuild (re-embeds every record)", rebuild_rows(payload)))
    return out


def growth_text(points: list[dict[str, Any]], unit: str) -> str:
    """``1k → 10k ×1.19 (+8.0 ms per decade)`` for each step."""
    return "; ".join(
        f"{_n(g['from'])} → {_n(g['to'])} "
        + (f"×{g['ratio']:.2f} " if g["ratio"] is not None else "")
        + f"({g['per_decade']:+.1f} {unit} per decade)"
        for g in points
        if g["per_decade"] is not None
    )


def verdicts(payload: dict[str, Any]) -> list[str]:
    """One honest sentence per target: the figure, met or not, and what limits it."""
    sizes = {s["size"]: s for s in payload["sizes"]}
    out = []
    s10 = sizes.get(10_000)
    if s10 is None:
        out.append(
            "**Turn overhead:** no 10k store in this mode; the p95 ≤ 30 ms target is judged at 10k only."
        )
    else:
        o, nodes = s10["overhead_ms"], s10["nodes_ms"]
        embed = nodes.get("embedding wait in retrieve", {}).get("p50", 0.0)
        growers = _biggest_growth(payload)
        verdict = "met" if s10["target_met"] else "missed"
        out.append(
            f"**Turn overhead:** p95 {o['p95']:.1f} ms at 10k (median of {len(s10['runs'])} runs, spread "
            f"{o['p95_spread']:.1f} ms) against ≤ {s10['target_p95_ms']:.0f} ms — {verdict}. The floor is "
            f"embedding the message: retrieve waits {embed:.1f} ms p50 for it (as a query to search and, on a "
            f"second engine at the same time, as a passage to store), and everything else takes "
            f"{o['p50'] - embed:.1f} ms at p50; the time that grows with the store is in {growers}."
        )
        ratios = [f"{x['overhead_ratio']:.2f}× at {x['size']:,} (target ≤ {x['target_ratio']:.1f}×, "
                  f"{'met' if x['ratio_met'] else 'missed'})"
                  for x in payload["sizes"] if x.get("target_ratio") is not None]  # fmt: skip
        if ratios:
            out.append(
                "**Against the embedder** (p95 overhead ÷ the embedder's own p50 time for one query, "
                f"measured after each size's turns): {'; '.join(ratios)}."
            )
    ing = payload["ingest"][0]
    out.append(
        f"**Ingest:** `Runtime.ingest` reaches {ing['ratio']['p50']:.2f}× the embedder's own throughput "
        f"({ing['ingest_events_per_s']['p50']:.1f} vs {ing['embedder_events_per_s']['p50']:.1f} events/s, "
        f"spread {ing['ratio']['spread']:.2f} over {ing['repetitions']} repetitions) against ≥ "
        f"{ing['target_ratio']:.2f} — {'met' if ing['target_met'] else 'missed'}"
        + (
            " (a ratio above 1 is load drift between the two measurements on a shared machine)"
            if ing["ratio"]["p50"] > 1
            else ""
        )
        + ". Besides embedding, each "
        f"event costs {ing['non_embedding_ms_per_event']['p50']:.2f} ms (SQL row and its commit, jieba "
        "tokens for FTS5 and tags for the association graph, the vector outbox and the Qdrant Edge upsert); "
        "embedding is "
        f"{100 * ing['embedding_share_of_ingest']['p50']:.0f} % of the ingest's wall time."
        + "".join(
            f" Into the {r['store']:,} store: {r['ratio']['p50']:.2f}× ({r['non_embedding_ms_per_event']['p50']:.2f} "
            "ms per event besides embedding)."
            for r in payload["ingest"][1:]
        )
    )
    worst = max(payload["sizes"], key=lambda s: s["tokens"]["memory"]["p95"])
    t = worst["tokens"]
    out.append(
        f"**Memory tokens:** at most p95 {t['memory']['p95']:.0f} tokens per turn (at {worst['size']:,} "
        f"memories; max {t['memory']['max']:.0f}) against ≤ {payload['targets']['memory_tokens_per_turn']} — "
        f"{'met' if payload['met']['memory_tokens'] else 'missed'}. The block is capped by "
        "`retrieval.max_injected` and `max_prompt_items`, so it does not grow with the store, while a "
        f"full-context prompt of the same history is {t['full_context']['p50']:,.0f} tokens there."
    )
    if payload["rebuild"]:
        r = payload["rebuild"][-1]
        far = max(r["extrapolated_s"], key=int, default=None)
        estimate = f", so about {_duration(r['extrapolated_s'][far])} at {_n(int(far))}" if far else ""
        out.append(
            f"**Rebuild** (no target): {r['records_per_s']:.1f} records/s at {r['size']:,} memories — it "
            f"re-embeds every record ({100 * (r['embedding_share'] or 0):.0f} % of its time){estimate}; an "
            "offline repair step, not on any turn's path."
        )
    return out


def _biggest_growth(payload: dict[str, Any]) -> str:
    """The two nodes whose p50 grows most from the smallest to the largest size."""
    sizes = payload["sizes"]
    first, last = sizes[0]["nodes_ms"], sizes[-1]["nodes_ms"]
    keys = [
        k for k in first if k in last and k != "chat model (subtracted)" and not k.startswith("embedding")
    ]
    deltas = sorted(((last[k]["p50"] - first[k]["p50"], k) for k in keys), reverse=True)
    return ", ".join(f"{k} ({d:+.1f} ms)" for d, k in deltas[:2]) or "no node"


def section(payload: dict[str, Any], plots: Path) -> str:
    """The Markdown section: tables, growth, verdicts, and the two plots."""
    st = payload["settings"]
    lines = [
        "## Performance (memory overhead, ingest, rebuild, tokens)",
        "",
        f"`tianma bench perf` ({payload['mode']}, {payload['wall_s']:.0f} s, OMP_NUM_THREADS="
        f"{st['omp_num_threads']}): one user's synthetic store of N memories (80 % events, facts, "
        f"preferences, experiences, {st['strategies']} strategies; a pool of embedded statements cycled "
        "with vector noise: real index sizes and search cost, not retrieval quality), closed and reopened, "
        f"then {st['warmup']} warm-up and {st['turns']} measured `Runtime.chat` turns per run, "
        f"{st['runs']} run(s) per size. Overhead = wall time minus the scripted chat model's span; p50/p95 "
        "are medians over runs, spread = max − min across runs.",
        "",
        *_markdown(overhead_rows(payload)),
        "",
        f"Growth of p50: {growth_text(payload['growth']['overhead_p50_ms'], 'ms') or '—'}. "
        f"Growth of p95: {growth_text(payload['growth']['overhead_p95_ms'], 'ms') or '—'}.",
        "",
        *_markdown(node_rows(payload)),
        "",
        f"Batch ingest of {st['ingest_texts']} Chinese and English messages (batch {st['ingest_batch']}, a "
        "fresh e5 embedder each time): ratio = ingest events/s ÷ the embedder's own passages/s on the same "
        "texts (* = against the empty-store embedder median, not paired).",
        "",
        *_markdown(ingest_rows(payload)),
        "",
        "Memory-block tokens are counted in the system prompt actually sent; full context = every stored "
        "message and reply of the user plus the new one.",
        "",
        *_markdown(token_rows(payload)),
        "",
    ]
    if payload["rebuild"]:
        lines += [
            "Index rebuild (`Runtime.rebuild_index`: both indexes dropped and refilled from SQL, every "
            "record re-embedded), extrapolated to larger stores at the measured rate:",
            "",
            *_markdown(rebuild_rows(payload)),
            "",
        ]
    sized = [x for x in payload["sizes"] if x.get("checkpoints")]
    if sized:
        shown = "; ".join(
            f"{x['size']:,} memories: {x['checkpoints']['checkpoints']} checkpoint(s) for "
            f"{x['checkpoints']['dialogues']} dialogue(s), {x['checkpoints']['bytes'] / 1024:.0f} KiB "
            f"({x['checkpoints']['bytes_per_dialogue'] / 1024:.1f} KiB per dialogue, largest "
            f"{x['checkpoints']['largest_bytes'] / 1024:.1f} KiB)"
            for x in sized
        )
        lines += [f"Checkpoints after the measured turns (one per dialogue, window only): {shown}.", ""]
    lines += [f"- {v}" for v in verdicts(payload)]
    overhead, tokens = plot_overhead(payload, plots), plot_tokens(payload, plots)
    lines += [
        "",
        f"![turn overhead vs memories]({overhead.relative_to(plots.parent).as_posix()})",
        f"![memory tokens vs full context]({tokens.relative_to(plots.parent).as_posix()})",
        "",
    ]
    return "\n".join(lines)


def plot_overhead(payload: dict[str, Any], plots: Path) -> Path:
    """p50 and p95 (medians of runs, bars = min–max of runs) against memories on a log axis."""
    from tianma.bench.plotting import pyplot, save

    plt = pyplot()
    sizes = payload["sizes"]
    xs = [s["size"] for s in sizes]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for key, marker in (("p50", "o"), ("p95", "s")):
        ys = [s["overhead_ms"][key] for s in sizes]
        lo = [y - min(s["overhead_ms"][f"{key}_runs"]) for y, s in zip(ys, sizes, strict=True)]
        hi = [max(s["overhead_ms"][f"{key}_runs"]) - y for y, s in zip(ys, sizes, strict=True)]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker=marker, capsize=4, label=f"{key} (median of runs)")
    targets = [(int(n), v) for n, v in payload["targets"]["overhead_p95_ms"].items() if int(n) in xs]
    ax.scatter([n for n, _ in targets], [v for _, v in targets], marker="x", color="red", label="p95 target")
    ax.set_xscale("log")
    ax.set_xlabel("memories in the store")
    ax.set_ylabel("overhead per turn (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title("tianma memory overhead per chat turn")
    ax.legend(fontsize=8)
    return save(fig, plots / "perf_overhead.png")


def plot_tokens(payload: dict[str, Any], plots: Path) -> Path:
    """Memory-block tokens (p50, p95) against the full-context prompt, per size, log scale."""
    from tianma.bench.plotting import pyplot, save

    plt = pyplot()
    sizes = payload["sizes"]
    series = (
        ("memory block p50", [s["tokens"]["memory"]["p50"] for s in sizes]),
        ("memory block p95", [s["tokens"]["memory"]["p95"] for s in sizes]),
        ("full context p50", [s["tokens"]["full_context"]["p50"] for s in sizes]),
    )
    fig, ax = plt.subplots(figsize=(6.5, 4))
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series):
        ax.bar([x + i * width for x in range(len(sizes))], [max(v, 1) for v in values], width, label=label)
    ax.axhline(payload["targets"]["memory_tokens_per_turn"], color="red", linestyle="--", label="target")
    ax.set_xticks([x + width for x in range(len(sizes))], [f"{s['size']:,}" for s in sizes])
    ax.set_yscale("log")
    ax.set_ylim(bottom=10)
    ax.set_xlabel("memories in the store")
    ax.set_ylabel("tokens per turn (cl100k)")
    ax.set_title("memory block vs full-context prompt")
    ax.legend(fontsize=8)
    return save(fig, plots / "perf_tokens.png")
