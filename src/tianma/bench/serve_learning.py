"""Turn overhead of ``tianma serve`` while reflections run, against the same traffic with none.

Several users chat at once through the proxy; the Ollama stand-in answers a chat turn at once
but takes ``reflect_s`` seconds (10 s in ``full``: a NAS model writing a structured answer) for
every learning call (reflection, rolling summary). Three servers, the same traffic, one run:

* **idle** — reflection off: the baseline p95;
* **background** — reflection on, triggered every few messages and run by the background
  worker (what ``tianma serve`` does): the turns made while a reflection was running;
* **inline** — reflection on, run inside the turn that triggered it (``Runtime.chat`` without
  the worker; what serve did before): shows what the worker saves.

Target: background p95 ≤ 1.2 × idle p95.
"""

from __future__ import annotations

import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tianma import Runtime, Settings
from tianma.bench.common import describe
from tianma.llm.summary import SUMMARY_PROMPT
from tianma.serve import create_app
from tianma.settings import LearningSettings, OllamaSettings, ServeSettings
from tianma.testing.ollama_standin import OllamaStandin
from tianma.testing.server import ServerThread

MODEL = "qwen2.5:7b"
TARGET_RATIO = 1.2
REFLECTION_MARK = "recent messages"
"""Words of tianma's reflection prompt (``tianma.prompting.reflection_messages``)."""
EMPTY_REFLECTION = '{"new_facts": [], "supported": [], "contradicted": [], "strategies": []}'


@dataclass(frozen=True)
class LearningPlan:
    users: int
    turns_per_user: int
    reflect_s: float


LEARNING_PLANS = {
    "smoke": LearningPlan(2, 4, 0.3),
    "quick": LearningPlan(3, 12, 2.0),
    "full": LearningPlan(4, 25, 10.0),
}


class SlowLearning:
    """The stand-in's reply: instant for a chat turn, ``seconds`` for a learning call."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        self.busy = 0
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        first, last = str(messages[0].get("content", "")), str(messages[-1].get("content", ""))
        summary = first == SUMMARY_PROMPT
        if not summary and REFLECTION_MARK not in last:
            return "好的，我来帮你想想。"
        with self._lock:
            self.calls += 1
            self.busy += 1
        try:
            time.sleep(self.seconds)
        finally:
            with self._lock:
                self.busy -= 1
        return "{}" if summary else EMPTY_REFLECTION

    def running(self) -> bool:
        with self._lock:
            return self.busy > 0


def _traffic(url: str, plan: LearningPlan, model: SlowLearning, tick: Any) -> list[tuple[float, bool]]:
    """Every user chats ``turns_per_user`` turns in one conversation; (seconds, a learning call
    was running during the turn) per turn."""

    def one_user(u: int) -> list[tuple[float, bool]]:
        out = []
        history: list[dict[str, str]] = []
        with httpx.Client(timeout=600) as client:
            for t in range(plan.turns_per_user):
                history.append({"role": "user", "content": f"用户{u}的第{t}个问题：我不吃香菜，周末做什么菜好？"})
                busy = model.running()
                started = time.perf_counter()
                r = client.post(f"{url}/api/chat", json={"model": MODEL, "stream": False, "messages": history},
                                headers={"Authorization": f"Bearer key{u}"})  # fmt: skip
                r.raise_for_status()
                seconds = time.perf_counter() - started
                history.append({"role": "assistant", "content": r.json()["message"]["content"]})
                out.append((seconds, busy or model.running()))
                tick()
        return out

    with ThreadPoolExecutor(plan.users) as pool:
        return [x for xs in pool.map(one_user, range(plan.users)) for x in xs]


def _arm(plan: LearningPlan, home: Path, reflect: bool, background: bool, tick: Any) -> dict[str, Any]:
    model = SlowLearning(plan.reflect_s)
    learning = LearningSettings(auto_reflect=reflect, every_messages=3, model_every_messages=0)
    with OllamaStandin(reply=model) as upstream:
        keys = {f"key{u}": f"user{u}" for u in range(plan.users)}  # one user per key
        settings = Settings(home=home, ollama=OllamaSettings(base_url=upstream.base_url), learning=learning,
                            serve=ServeSettings(api_keys=keys))  # fmt: skip
        with Runtime(settings) as rt:
            app = create_app(rt, scheduler=False, background_learning=background)
            with ServerThread(app) as url:
                with httpx.Client(timeout=60) as warm:  # load the embedder before measuring
                    warm.post(f"{url}/api/chat", headers={"Authorization": "Bearer key0"},
                              json={"model": MODEL, "stream": False, "messages": [{"role": "user", "content": "预热"}]})
                rows = _traffic(url, plan, model, tick)
                worker = rt.start_background_learning() if background else None
                if worker is not None:
                    worker.wait_idle(plan.reflect_s * plan.users * 4)
    during = [s * 1000 for s, busy in rows if busy] if reflect else [s * 1000 for s, _ in rows]
    return {"turn_ms": describe([s * 1000 for s, _ in rows], 1), "during_learning_ms": describe(during, 1) if during else None,
            "turns_during_learning": len(during), "learning_calls": model.calls}  # fmt: skip


def run_learning(mode: str, tick: Any) -> dict[str, Any]:
    """The three arms; the ratio of background to idle p95."""
    plan = LEARNING_PLANS[mode]
    out: dict[str, Any] = {"plan": plan.__dict__, "target_ratio": TARGET_RATIO}
    for name, reflect, background in (("idle", False, True), ("background", True, True), ("inline", True, False)):
        with tempfile.TemporaryDirectory(prefix=f"tianma-bench-learning-{name}-") as home:
            out[name] = _arm(plan, Path(home), reflect, background, tick)
    idle = out["idle"]["turn_ms"]["p95"]
    busy = out["background"]["during_learning_ms"]
    out["ratio"] = round(busy["p95"] / idle, 3) if busy and idle else None
    out["met"] = out["ratio"] is not None and out["ratio"] <= TARGET_RATIO
    return out


def total_turns(mode: str) -> int:
    plan = LEARNING_PLANS[mode]
    return 3 * plan.users * plan.turns_per_user
