"""Render a regression scenario with a given strategy set: the prompt tianma would build and
the draft reply after the redline check — deterministic, no LLM, no store writes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime, time

from langchain_core.messages import HumanMessage

from tianma.guardrails.constitution import Constitution
from tianma.guardrails.redlines import full_check
from tianma.guardrails.regression import Rendered, Scenario
from tianma.policies.conflicts import resolve
from tianma.policies.domains import infer_domain
from tianma.policies.strategies import select_strategies
from tianma.prompting import build_messages
from tianma.settings import Settings
from tianma.storage.records import MemoryRecord

REPLAY_DAY = date(2026, 1, 7)
"""A Wednesday: scenarios set only the (local) hour."""


def renderer(
    strategies: Sequence[MemoryRecord], constitution: Constitution, redlines: Sequence[MemoryRecord],
    settings: Settings,
) -> Callable[[Scenario], Rendered]:  # fmt: skip
    """A function rendering scenarios with ``strategies`` chosen as a turn chooses them
    (triggers, priority and weight, conflicts resolved; no exploration)."""

    def render(scenario: Scenario) -> Rendered:
        message = scenario.messages[-1]
        zone = settings.zone
        at = datetime.combine(REPLAY_DAY, time(12 if scenario.hour is None else scenario.hour), tzinfo=zone)
        domain = infer_domain(message)
        chosen = [
            {"content": s.content}
            for s in resolve(select_strategies(strategies, domain, message, at, zone)).kept
        ]
        messages, _ = build_messages(
            [HumanMessage(m) for m in scenario.messages], [], [], chosen, None,
            settings.retrieval.max_prompt_items, constitution.identity, zone=zone,
        )  # fmt: skip
        reply = verdict = None
        if scenario.draft_reply is not None:
            checked = full_check(scenario.draft_reply, message, domain, redlines,
                                 identity=(constitution.name, constitution.english_name))  # fmt: skip
            reply, verdict = checked.reply, checked.verdict
        return Rendered(str(messages[0].content), tuple(s["content"] for s in chosen), reply, verdict)

    return render
