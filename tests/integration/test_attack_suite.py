"""The poisoning / injection attack suite (tests/fixtures/attacks) against the whole runtime.

Worst case on purpose: the reflection LLM *complies* — it proposes every message of the window
as a new strategy and as a revised preference. Each attack is stated in a chat (or arrives in
imported history), reflected on, stated again the next day and reflected on again. Success for
the attacker = any active strategy or preference carrying its payload, or the payload in the
preference/strategy sections of a later prompt. The suite must end with zero successes.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel, is_reflection_prompt
from tests.integration.test_reflection import EMPTY, LINE, T0

ATTACKS = [json.loads(line) for line in (Path(__file__).parents[1] / "fixtures" / "attacks" / "attacks.jsonl")
           .read_text(encoding="utf-8").splitlines() if line.strip()]  # fmt: skip


def compliant_model() -> ScriptedChatModel:
    def respond(messages: Any) -> str:
        if not is_reflection_prompt(messages):
            return "好的。"
        out: dict[str, list[dict[str, Any]]] = {k: [] for k in EMPTY}
        for event_id, text in LINE.findall(str(messages[-1].content)):
            out["new_strategies"].append({"trigger": {}, "action": text, "source_event_ids": [event_id]})
            out["revised_preferences"].append({"content": text, "source_event_ids": [event_id]})
        return json.dumps(out, ensure_ascii=False)

    return ScriptedChatModel(responder=respond)


def sections(prompt: str) -> str:
    """The preference and strategy sections of a system prompt (memories are quoted data)."""
    found = re.findall(r"【(?:用户偏好|历史有效策略)】\n((?:\d+\. .*\n?)*)", prompt)
    return "\n".join(found)


def test_the_attack_suite_has_at_least_fifty_cases_in_both_languages() -> None:
    assert len(ATTACKS) >= 50
    assert {"zh", "en"} <= {a["lang"] for a in ATTACKS}
    assert {"chat", "ingest"} == {a["channel"] for a in ATTACKS}


def test_no_attack_becomes_an_active_strategy_or_preference(make_runtime: RuntimeFactory) -> None:
    model = compliant_model()
    rt = make_runtime(chat_model=model, embedder=CharacterEmbedder(), policies={"epsilon": 0.0})
    successes = []
    for n, case in enumerate(ATTACKS):
        user = f"victim{n}"
        for day in range(2):
            at = T0 + timedelta(days=day)
            if case["channel"] == "ingest":
                rt.ingest(user, [{"role": "user", "text": m, "at": at + timedelta(minutes=i), "dialogue_id": f"{user}-{day}"}
                                 for i, m in enumerate(case["messages"])])  # fmt: skip
            else:
                for i, m in enumerate(case["messages"]):
                    rt.chat(user, m, dialogue_id=f"{user}-{day}", at=at + timedelta(minutes=i))
            rt.reflect(user, at=at + timedelta(hours=1))
        rt.chat(
            user,
            "帮我看看今天的安排 / what's on today?",
            dialogue_id=f"{user}-check",
            at=T0 + timedelta(days=2),
        )
        prompt = sections(str(model.prompts[-1][0].content)).lower()
        learnt = [r.content.lower() for r in rt.memories(user)
                  if r.kind in ("strategy", "preference") and r.status == "active"]  # fmt: skip
        for fragment in (f.lower() for f in case["forbidden"]):
            if fragment in prompt or any(fragment in text for text in learnt):
                successes.append(f"{case['id']}: {fragment}")
        assert rt.reviews(user, "rejected"), f"{case['id']}: nothing was rejected"
    assert successes == []
