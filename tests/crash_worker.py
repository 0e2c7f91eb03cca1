"""The process the crash test kills: random turns, ingests, feedback, reflections, aggregation
passes and forgets against one data home, forever.

``python -m tests.crash_worker HOME SEED FOCUS`` prints one JSON line per step: ``{"ready"}``
once the runtime is open, ``{"begin": op}`` before an operation, ``{"ack": op, ...}`` with what
it stored (or forgot) once the operation returned. ``FOCUS`` is the operation chosen most often,
so that a kill at a random moment most likely lands inside one.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes import CharacterEmbedder, learning_model
from tianma import Runtime, Settings

OPS = ("chat", "ingest", "feedback", "reflect", "aggregate", "forget", "forget_dialogue")
USERS = ("u1", "u2")
FOODS = ("川菜", "粤菜", "寿司", "披萨", "火锅", "面条")
T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def say(**line: Any) -> None:
    print(json.dumps(line, ensure_ascii=False), flush=True)


def reflection_reply(prompt: str) -> str:
    """Every reflection proposes one fact from its window (so that runs publish something)."""
    food = next((f for f in FOODS if f in prompt), FOODS[0])
    fact = {"key": f"food.likes.{FOODS.index(food)}", "content": f"用户喜欢{food}", "source_event_ids": []}
    empty: list[Any] = []
    return json.dumps({"new_facts": [fact], "revised_preferences": empty, "new_strategies": empty,
                       "deprecated_memories": empty}, ensure_ascii=False)  # fmt: skip


def main(home: Path, seed: int, focus: str) -> None:
    rng = random.Random(seed)
    settings = Settings(home=home, learning={"auto_reflect": False, "model_every_messages": 0},
                        telemetry={"local_store": False})  # fmt: skip
    rt = Runtime(settings, chat_model=learning_model(reflection_reply), embedder=CharacterEmbedder())
    at = T0 + timedelta(days=seed)
    say(ready=True)
    for n in range(100_000):
        at += timedelta(minutes=rng.randint(1, 90))
        op = focus if rng.random() < 0.6 else rng.choice(OPS)
        user = rng.choice(USERS)
        tag = f"{seed}.{n}"
        if op not in ("forget", "forget_dialogue"):
            say(begin=op, tag=tag)
        if op == "chat":
            dialogue = f"{user}-s{seed}-d{rng.randint(0, 3)}"
            wish = "以后推荐菜的时候先说价格。" if rng.random() < 0.2 else ""
            turn = rt.chat(user, f"[{tag}] 推荐一家{rng.choice(FOODS)}店？{wish}", dialogue_id=dialogue, at=at)
            injected = sorted({m.id for m in (*turn.memories, *turn.resident)} | {s.id for s in turn.strategies})
            say(ack=op, tag=tag, user=user, events=[turn.event_id], injected=injected)
        elif op == "ingest":
            events = [{"role": "user", "text": f"[{tag}/{i}] 我以前常吃{rng.choice(FOODS)}", "dialogue_id": f"{user}-s{seed}-old",
                       "at": (at - timedelta(days=30, minutes=i)).isoformat(), "external_id": f"{tag}/{i}"}
                      for i in range(rng.randint(5, 40))]  # fmt: skip
            say(ack=op, tag=tag, user=user, events=rt.ingest(user, events))
        elif op == "feedback":
            mine = rt.memories(user, kind="event")
            if mine:
                rt.feedback(rng.choice(mine).id, rng.choice(("like", "dislike")), at=at)
            say(ack=op, tag=tag)
        elif op == "reflect":
            rt.reflect(user, at=at)
            say(ack=op, tag=tag)
        elif op == "aggregate":
            rt.aggregate_signals(at)
            say(ack=op, tag=tag)
        elif op == "forget":
            mine = [r for r in rt.memories(user) if r.kind in ("event", "fact", "preference")]
            gone = [rng.choice(mine).id] if mine else []
            say(begin=op, tag=tag, targets=gone)  # what may be gone if the kill comes now
            for record_id in gone:
                rt.forget(user, record_id)
            say(ack=op, tag=tag, forgotten=gone)
        elif op == "forget_dialogue":
            dialogue = f"{user}-s{seed}-d{rng.randint(0, 3)}"
            ids = [r.id for r in rt.memories(user) if r.dialogue_id == dialogue]
            say(begin=op, tag=tag, targets=ids)
            if ids:
                rt.forget_dialogue(user, dialogue)
            say(ack=op, tag=tag, forgotten=ids)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
