"""Assembly of the turn graph: six nodes in a fixed order, each filled from the registry."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from tianma import plugins
from tianma.graph.deps import Deps
from tianma.graph.state import TurnState
from tianma.settings import NODE_NAMES, NodeSettings
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import mark_arm, tracer

NodeFn = Callable[..., Any]


def traced(name: str, fn: NodeFn, prefix: str = sc.NODE_SPAN_PREFIX, impl: str | None = None) -> NodeFn:
    """Run a node inside its own span, ``<prefix><name>`` (``tianma.node retrieve``), which
    says which implementation filled the slot (``tianma.node.impl``: ``builtin``, an entry-point
    name or an import path)."""

    @functools.wraps(fn)
    def run(state: Any, runtime: Any) -> Any:
        with tracer.start_as_current_span(prefix + name) as span:
            span.set_attribute(sc.TIANMA_NODE_NAME, name)
            span.set_attribute(sc.TIANMA_NODE_IMPL, impl or "builtin")
            mark_arm(span)
            span.set_attribute(sc.TIANMA_USER_ID, state["user_id"])
            return fn(state, runtime)

    return run


UNLOCKED_NODES = frozenset({"generate", "capture_signals"})
"""Nodes that run without the memory lock: ``generate`` only talks to the chat model;
``capture_signals`` holds ``Deps.lock`` itself while it writes and lets it go for the rolling
summary's model call (a plugin in that slot must take the lock around its memory work too)."""


def serialised(fn: NodeFn) -> NodeFn:
    """Run a node while holding ``Deps.lock`` (memory access is one thread at a time)."""

    @functools.wraps(fn)
    def run(state: Any, runtime: Any) -> Any:
        with runtime.context.lock:
            return fn(state, runtime)

    return run


def resolve_nodes(choice: NodeSettings) -> dict[str, NodeFn]:
    """The implementation chosen for each slot (``builtin`` = the entry point of that name)."""
    return {name: plugins.nodes.resolve(getattr(choice, name), default=name) for name in NODE_NAMES}


def build_turn_graph(
    choice: NodeSettings, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """``load_strategies → retrieve → rerank → generate → redline_check → capture_signals``."""
    graph = StateGraph(TurnState, context_schema=Deps)
    previous = START
    for name, fn in resolve_nodes(choice).items():
        graph.add_node(name, traced(name, fn if name in UNLOCKED_NODES else serialised(fn), impl=getattr(choice, name)))
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(checkpointer=checkpointer, name=sc.AGENT_NAME)
