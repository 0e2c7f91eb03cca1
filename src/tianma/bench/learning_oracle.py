"""An oracle reflection model for ``tianma bench learning --model oracle``: what the model half of
learning (:mod:`tianma.memory.model_closes`) can add at best.

The default learning benchmark answers every reflection prompt with broken JSON, so only the
rules learn. This model instead answers valid JSON with one list filled from the scenario's
truth: ``superseded_statements`` — for each statement the prompt lists as still holding, a later
listed statement or message of the same simulated preference with another version (the change
of mind the rules missed). It knows nothing else (no facts, preferences or strategies), and a
statement it cannot place (a mood, a chatter line) is never named. ``wrong`` adds random pairs
among the listed statements at that rate, to see what a model that errs costs.

It reads tianma's own prompt (the ``[id] (date) text`` lines of its sections), so it is a tool for
this benchmark only, never a stand-in for a real model's judgement.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from tianma.bench.learning_curves import purpose
from tianma.bench.learning_sim import Scenario

EMPTY: dict[str, list[object]] = {"new_facts": [], "revised_preferences": [], "new_strategies": [], "deprecated_memories": []}
HELD = "statements that still hold"
KEPT = "memories already kept"
_LINE = re.compile(r"^\[([^\]]+)\] \([^)]*\)(?: 用户:)? (.*)$", re.MULTILINE)


@dataclass
class Oracle:
    """The scenario's statements by text (whitespace-normalised), longest first."""

    phrasings: list[tuple[str, str, int]]
    """(text, preference id, version)."""
    wrong: float = 0.0
    seed: int = 7
    pairs: int = 0
    wrong_pairs: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self.phrasings.sort(key=lambda x: -len(x[0]))

    @classmethod
    def of(cls, sc: Scenario, wrong: float = 0.0) -> Oracle:
        rows = [(" ".join(text.split()), p.id, v)
                for u in sc.users for p in u.preferences
                for v, texts in enumerate([p.phrasings, *(c.phrasings for c in p.changes)]) for text in texts]  # fmt: skip
        return cls(rows, wrong)

    def label(self, text: str) -> tuple[str, int] | None:
        """The preference and version a line states (a correction quotes one), if any."""
        return next(((pid, v) for t, pid, v in self.phrasings if t in text), None)

    def respond(self, messages: Sequence[BaseMessage], fallback: str) -> str:
        """Reflection prompts: the oracle's JSON; anything else: ``fallback`` (a reply, a summary)."""
        if purpose(messages) != "reflection":
            return fallback
        prompt = str(messages[-1].content)
        if HELD not in prompt:
            return json.dumps({**EMPTY, "superseded_statements": []})
        head, held = prompt.split(HELD, 1)
        standing = [(i, self.label(t)) for i, t in _LINE.findall(held)][::-1]  # listed newest first
        window = [(i, self.label(t)) for i, t in _LINE.findall(head.split(KEPT)[0])]
        order = {i: k for k, (i, _) in enumerate([*standing, *window])}
        out: list[dict[str, str]] = []
        for sid, said in standing:
            later = [bid for bid, lab in [*standing, *window]
                     if said and lab and lab[0] == said[0] and lab[1] != said[1] and order[bid] > order[sid]]  # fmt: skip
            if later:
                out.append({"statement_id": sid, "by_event_id": later[0]})
        ids = [i for i, _ in standing]
        for _ in range(len(out) + 1):
            if len(ids) > 1 and self._rng.random() < self.wrong:
                old, new = self._rng.sample(ids, 2)
                out.append({"statement_id": old, "by_event_id": new})
                self.wrong_pairs += 1
        self.pairs += len(out)
        return json.dumps({**EMPTY, "superseded_statements": out})
