"""The reflection subgraph: gather → reflect → merge_evidence → detect_contradictions → score → publish.

Its own input and output schemas; ``guard`` (zones, circuit breaker, content and injection
filters, failure batching) and ``validate`` (the regression gate) run between ``score`` and
``publish``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from tianma.guardrails.breaker import CircuitBreaker
from tianma.guardrails.constitution import Constitution
from tianma.guardrails.regression import Scenario
from tianma.memory.service import Memory
from tianma.settings import REFLECTION_SLOTS, ReflectionNodeSettings, Settings


class ReflectionInput(TypedDict):
    user_id: str
    at: datetime
    trigger: str
    """``manual``, ``dialogues``, ``messages``, ``negative``, ``nightly``, ``import:<id>``."""
    dry_run: bool
    since: NotRequired[datetime | None]
    """Reflect on the messages after this (None: all up to ``at``) instead of those after the
    last published reflection: an import's windows over old days."""
    rules_only: NotRequired[bool]
    """Never call the chat model (an import of thousands of old messages)."""


class ReflectionOutput(TypedDict, total=False):
    run_id: str
    report: dict[str, Any]


class ReflectionState(ReflectionInput, ReflectionOutput, total=False):
    events: list[dict[str, Any]]
    """The window reflected on: id, text, at, dialogue_id."""
    until: datetime
    existing: list[dict[str, Any]]
    """Active and pending learnt records (plain data)."""
    proposals: list[dict[str, Any]]
    plan: list[dict[str, Any]]
    closed: dict[str, list[str]]
    """Learnt record id → the newer statements that closed events it was learnt from."""
    lapsed: list[str]
    """Learnt records every statement of which was closed: no longer current, to deprecate."""
    streaks: dict[str, int]
    """Record id → consecutive dialogues it was injected in without a negative signal."""
    llm: dict[str, Any]
    """What the LLM call did: attempts, tokens, dropped and why."""
    standing: list[dict[str, Any]]
    """The user's lasting statements that still hold (id, at, text), shown to the model when one
    may close another: two or more of them, or one and a lasting statement in the window
    (:mod:`tianma.memory.model_closes`)."""
    close_statements: list[dict[str, Any]]
    """Statements the model said a later message superseded, checked: statement_id, by_event_id, at."""


@dataclass(frozen=True, slots=True)
class ReflectionDeps:
    memory: Memory
    chat_model: BaseChatModel
    settings: Settings
    constitution: Constitution
    breaker: CircuitBreaker
    scenarios: Callable[[], tuple[Scenario, ...]]
    """The regression set (read when a gate runs, so edits apply without a restart)."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    """The runtime's memory lock: every node but ``reflect`` holds it; ``reflect`` holds it only
    to read, never while the chat model is called, so turns go on during a reflection."""


UNLOCKED_REFLECTION_NODES = frozenset({"reflect"})
"""Nodes that take the memory lock themselves, around their reads only (the model call runs outside)."""

REFLECTION_NODES = (
    "gather", "reflect", "merge_evidence", "detect_contradictions", "score", "guard", "validate", "publish",
)  # fmt: skip


def build_reflection_graph(choice: ReflectionNodeSettings | None = None) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The subgraph, compiled without a checkpointer (a run is one transaction); each slot of
    :data:`~tianma.settings.REFLECTION_SLOTS` filled as ``choice`` says (``builtin`` = the entry
    point ``reflection.<slot>``), ``guard`` and ``validate`` always the built-in ones."""
    from tianma import plugins
    from tianma.graph.build import traced
    from tianma.nodes import reflection_guard

    choice = choice or ReflectionNodeSettings()

    graph = StateGraph(
        ReflectionState,
        context_schema=ReflectionDeps,
        input_schema=ReflectionInput,
        output_schema=ReflectionOutput,
    )
    previous = START
    for name in REFLECTION_NODES:
        spec = getattr(choice, name) if name in REFLECTION_SLOTS else "builtin"
        if name in REFLECTION_SLOTS:
            node = plugins.nodes.resolve(spec, default=f"reflection.{name}")
        else:
            node = getattr(reflection_guard, name)
        node = node if name in UNLOCKED_REFLECTION_NODES else _locked(node)
        graph.add_node(name, traced(name, node, prefix="tianma.reflection ", impl=spec))
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(name="tianma-reflection")


def _locked(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """Run a reflection node while holding ``ReflectionDeps.lock``."""

    @functools.wraps(fn)
    def run(state: Any, runtime: Any) -> Any:
        with runtime.context.lock:
            return fn(state, runtime)

    return run
