"""``tianma bench serve``: what the proxy adds to a chat request — alone, streamed, under load.

Against the bundled Ollama stand-in (:mod:`tianma.testing.ollama_standin`) on loopback, so the
model's own time is fixed and known, and against the same request sent to the stand-in
directly:

* **overhead per turn** (non-streaming): proxied − direct latency of the same request, paired,
  p50/p95 — the memory turn (embedding, search, rerank, the redline check, recording) plus HTTP;
* **streaming**: time to the first token and to the end, direct and proxied, with the stand-in
  streaming a three-sentence reply at ``PIECE_DELAY`` s per piece (≈ 20 tokens/s): what
  check-then-release costs (the first sentence) on top of the turn;
* **a long paste**: the same streamed reply to a message of ``PASTE_CHARS`` characters (the
  user pasted a document), direct and proxied: what reading, embedding and recording it adds;
* **load**: several clients at once with the stand-in taking ``LOAD_MODEL_S`` per reply, under
  the default ``serve.max_concurrent``: turns/s against the ideal, and p95 latency.

Each request is a new conversation of one user in a fresh data home (the store grows to a few
hundred events); reflection is off so no turn also waits for one. Turn overhead over stores of
1k–100k memories is ``tianma bench perf``.
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tianma import Runtime, Settings
from tianma.bench.common import BenchContext, console, describe, header, progress_bar, write_json
from tianma.bench.serve_learning import run_learning, total_turns
from tianma.serve import create_app
from tianma.settings import LearningSettings, OllamaSettings
from tianma.testing.ollama_standin import OllamaStandin, pieces
from tianma.testing.server import ServerThread

MODEL = "qwen2.5:7b"
PIECE_DELAY = 0.05
STREAM_REPLY = "好的，周末的安排可以这样。上午去西湖边散步，呼吸新鲜空气。下午在家看书休息，晚上早点睡觉。"
LOAD_MODEL_S = 0.3
PASTE_CHARS = 30_000
PASTE = "会议记录：讨论了预算和排期，大家意见不一。We went through the budget line by line. "
"""Repeated to :data:`PASTE_CHARS`: a pasted document (no wish in it, so no statement to read)."""


@dataclass(frozen=True)
class ServePlan:
    turns: int
    streams: int
    clients: int
    turns_per_client: int
    pastes: int


PLANS = {"smoke": ServePlan(4, 2, 4, 2, 1), "quick": ServePlan(40, 10, 8, 4, 3), "full": ServePlan(200, 30, 32, 4, 5)}


def _ask(client: httpx.Client, url: str, text: str, stream: bool) -> tuple[float, float]:
    """(seconds to the first content, seconds to the end) of one chat request."""
    body = {"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": text}]}
    started = time.perf_counter()
    first = None
    with client.stream("POST", f"{url}/api/chat", json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if first is None and '"content":""' not in line.replace(" ", "") and line.strip():
                first = time.perf_counter() - started
    total = time.perf_counter() - started
    return (first if first is not None else total), total


def _question(i: int) -> str:
    return f"第{i}个问题：我下周{i % 7 + 1}要去杭州出差，帮我想想要带什么？"


def _overhead(proxy: str, direct: str, n: int, tick: Any) -> dict[str, Any]:
    pairs = []
    with httpx.Client(timeout=60) as client:
        for i in range(n):
            _, d = _ask(client, direct, _question(i), False)
            _, p = _ask(client, proxy, _question(i), False)
            pairs.append((d, p))
            tick()
    ms = [(p - d) * 1000 for d, p in pairs]
    return {"direct_ms": describe([d * 1000 for d, _ in pairs], 1),
            "proxied_ms": describe([p * 1000 for _, p in pairs], 1), "overhead_ms": describe(ms, 1)}  # fmt: skip


def _paired(proxy: str, direct: str, texts: list[str], timeout: float, tick: Any) -> dict[str, Any]:
    """Each text streamed straight to the stand-in and then through serve: first token and end,
    each way, and what serve added."""
    rows = []
    with httpx.Client(timeout=timeout) as client:
        for text in texts:
            rows.append((_ask(client, direct, text, True), _ask(client, proxy, text, True)))
            tick()
    return {
        "direct_first_ms": describe([d[0] * 1000 for d, _ in rows], 1),
        "proxied_first_ms": describe([p[0] * 1000 for _, p in rows], 1),
        "added_first_ms": describe([(p[0] - d[0]) * 1000 for d, p in rows], 1),
        "direct_total_ms": describe([d[1] * 1000 for d, _ in rows], 1),
        "proxied_total_ms": describe([p[1] * 1000 for _, p in rows], 1),
        "added_total_ms": describe([(p[1] - d[1]) * 1000 for d, p in rows], 1),
    }


def _streaming(proxy: str, direct: str, n: int, tick: Any) -> dict[str, Any]:
    return {**_paired(proxy, direct, [f"周末怎么安排？{i}" for i in range(n)], 60, tick),
            "first_sentence": STREAM_REPLY.split("。")[0] + "。", "piece_delay_s": PIECE_DELAY}  # fmt: skip


def _pastes(proxy: str, direct: str, n: int, tick: Any) -> dict[str, Any]:
    texts = [(f"{i}. " + PASTE * (PASTE_CHARS // len(PASTE) + 1))[:PASTE_CHARS] for i in range(n)]
    return {"chars": PASTE_CHARS, **_paired(proxy, direct, texts, 300, tick)}


def _load(proxy: str, plan: ServePlan, max_concurrent: int, tick: Any) -> dict[str, Any]:
    def client_run(c: int) -> list[float]:
        out = []
        with httpx.Client(timeout=120) as client:
            for t in range(plan.turns_per_client):
                out.append(_ask(client, proxy, _question(1000 * c + t), False)[1])
                tick()
        return out

    started = time.perf_counter()
    with ThreadPoolExecutor(plan.clients) as pool:
        latencies = [x for xs in pool.map(client_run, range(plan.clients)) for x in xs]
    wall = time.perf_counter() - started
    ideal = min(plan.clients, max_concurrent) / LOAD_MODEL_S
    return {"clients": plan.clients, "turns": len(latencies), "model_s": LOAD_MODEL_S,
            "max_concurrent": max_concurrent, "wall_s": round(wall, 2),
            "turns_per_s": round(len(latencies) / wall, 2), "ideal_turns_per_s": round(ideal, 2),
            "latency_ms": describe([x * 1000 for x in latencies], 1)}  # fmt: skip


def run(ctx: BenchContext) -> dict[str, Any]:
    """Measure, print, write the JSON; returns the payload."""
    plan = PLANS[ctx.mode]
    payload = header("serve", ctx.started, ctx.mode) | {"plan": plan.__dict__}
    with tempfile.TemporaryDirectory(prefix="tianma-bench-serve-") as home, progress_bar(ctx.show_progress) as bar:
        total = plan.turns + plan.streams + plan.pastes + plan.clients * plan.turns_per_client + total_turns(ctx.mode)
        task = bar.add_task("serve", total=total)

        def tick() -> None:
            bar.advance(task)

        with OllamaStandin(reply=lambda _m: STREAM_REPLY) as upstream:
            settings = Settings(home=Path(home), ollama=OllamaSettings(base_url=upstream.base_url),
                                learning=LearningSettings(auto_reflect=False))  # fmt: skip
            with Runtime(settings) as rt, ServerThread(create_app(rt, scheduler=False)) as proxy:
                with httpx.Client(timeout=60) as warm:
                    _ask(warm, proxy, "预热 warm-up", False)  # load the embedder
                payload["overhead"] = _overhead(proxy, upstream.base_url, plan.turns, tick)
                upstream.piece_delay = PIECE_DELAY
                payload["streaming"] = _streaming(proxy, upstream.base_url, plan.streams, tick)
                payload["pastes"] = _pastes(proxy, upstream.base_url, plan.pastes, tick)
                upstream.piece_delay, upstream.delay = 0.0, LOAD_MODEL_S
                payload["load"] = _load(proxy, plan, settings.serve.max_concurrent, tick)
                payload["events"] = len(rt.memories(settings.user, "event"))
        payload["learning"] = run_learning(ctx.mode, tick)
    payload["file"] = str(write_json(ctx.result_path("serve"), payload))
    _print(payload)
    return payload


def _print(p: dict[str, Any]) -> None:
    o, s, ld = p["overhead"]["overhead_ms"], p["streaming"], p["load"]
    lr = p["learning"]
    console.print(f"serve while reflections run: turn p95 {lr['background']['during_learning_ms']['p95']:.0f} ms "
                  f"vs idle {lr['idle']['turn_ms']['p95']:.0f} ms (×{lr['ratio']}, target ≤ {lr['target_ratio']}); "
                  f"reflection inside the turn: p95 {lr['inline']['turn_ms']['p95']:.0f} ms")  # fmt: skip
    console.print(f"serve: overhead per turn p50 {o['p50']:.1f} ms, p95 {o['p95']:.1f} ms; "
                  f"first token +{s['added_first_ms']['p50']:.0f} ms (p50); "
                  f"a {p['pastes']['chars']:,}-character paste +{p['pastes']['added_first_ms']['p50']:.0f} ms to its first token; "
                  f"load {ld['turns_per_s']:.2f} turns/s of ideal {ld['ideal_turns_per_s']:.2f}")  # fmt: skip


def section(payload: dict[str, Any], plots: Path) -> str:
    """The report's section: three small tables and what they mean."""
    o, s, ld = payload["overhead"], payload["streaming"], payload["load"]

    def row(name: str, d: dict[str, float]) -> str:
        return f"| {name} | {d['p50']:.1f} | {d['p95']:.1f} | {d['min']:.1f}–{d['max']:.1f} | {d['n']:.0f} |"

    lines = [
        "## tianma serve (the proxy)", "",
        "Against the bundled Ollama stand-in on loopback (the model's own time is fixed), each request a new "
        f"conversation, mode `{payload['mode']}`, {payload['events']} events stored by the end, reflection off.",
        "", "| ms | p50 | p95 | range | n |", "|---|---:|---:|---:|---:|",
        row("direct to Ollama (stand-in), non-streaming", o["direct_ms"]),
        row("through tianma serve", o["proxied_ms"]),
        row("**overhead per turn** (paired difference)", o["overhead_ms"]),
        row(f"streaming, first token direct ({s['piece_delay_s']:g} s per piece)", s["direct_first_ms"]),
        row("streaming, first token through tianma serve", s["proxied_first_ms"]),
        row("**added to the first token** (check-then-release)", s["added_first_ms"]),
        row("**added to the whole stream**", s["added_total_ms"]),
        *([row(f"a {payload['pastes']['chars']:,}-character paste, streaming, first token through tianma serve",
               payload["pastes"]["proxied_first_ms"]),
           row("**added to a paste's first token**", payload["pastes"]["added_first_ms"]),
           row("**added to a paste's whole stream**", payload["pastes"]["added_total_ms"])] if "pastes" in payload else []),
        "",
        f"The first token waits for the first sentence (「{s['first_sentence']}」, {len(pieces(s['first_sentence']))} "
        f"streamed pieces at {s['piece_delay_s']:g} s each) plus the turn's overhead; the rest of the stream runs one sentence "
        f"behind. Load: {ld['clients']} clients × {ld['turns'] // ld['clients']} turns with the model taking "
        f"{ld['model_s']:g} s per reply and serve.max_concurrent = {ld['max_concurrent']}: "
        f"**{ld['turns_per_s']:.2f} turns/s** of an ideal {ld['ideal_turns_per_s']:.2f}, latency p50 "
        f"{ld['latency_ms']['p50']:.0f} ms / p95 {ld['latency_ms']['p95']:.0f} ms (waiting in line included).",
        *_learning_lines(payload.get("learning")),
    ]  # fmt: skip
    return "\n".join(lines)


def _learning_lines(lr: dict[str, Any] | None) -> list[str]:
    """The table of turns while reflections run (``bench/serve_learning.py``)."""
    if not lr:
        return []
    plan = lr["plan"]

    def row(name: str, d: dict[str, float] | None) -> str:
        return f"| {name} | {d['p50']:.0f} | {d['p95']:.0f} | {d['n']:.0f} |" if d else f"| {name} | – | – | 0 |"

    met = "met" if lr["met"] else "**missed**"
    return [
        "", f"**While reflections run**: {plan['users']} users chat {plan['turns_per_user']} turns each at once; the "
        f"stand-in answers a turn at once but takes {plan['reflect_s']:g} s per learning call (reflection, rolling "
        "summary); reflection triggered every 3 messages with its model call on every run.", "",
        "| turn latency, ms | p50 | p95 | n |", "|---|---:|---:|---:|",
        row("idle (reflection off)", lr["idle"]["turn_ms"]),
        row("background worker, turns while a learning call ran", lr["background"]["during_learning_ms"]),
        row("reflection inside the turn (before the worker)", lr["inline"]["turn_ms"]),
        "", f"p95 while reflections run ÷ idle p95: **×{lr['ratio']}** (target ≤ {lr['target_ratio']}: {met}); "
        f"learning calls: {lr['background']['learning_calls']} background vs {lr['inline']['learning_calls']} inside "
        "the turn (a user triggered again while waiting is reflected once).",
    ]  # fmt: skip
