"""The decision tree of one turn, rebuilt from its stored spans, for the review UI.

Every part is optional: a node swapped for a plugin may set none of the built-in attributes.
The raw attributes of every node stay available in :attr:`NodeStep.attributes`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tianma.telemetry import semconv as sc
from tianma.telemetry.span_store import TURN_SPAN_NAME, SpanStore, StoredEvent, StoredSpan


@dataclass(frozen=True, slots=True)
class ScoredId:
    id: str
    score: float | None


@dataclass(frozen=True, slots=True)
class MemoryFlow:
    """Memories retrieved (fused relevance) → kept by rerank (final score) → injected."""

    retrieved: tuple[ScoredId, ...]
    kept: tuple[ScoredId, ...]
    dropped_count: int | None
    injected: tuple[str, ...]
    """The kept memories: what the turn put in its prompt (``Turn.memories``)."""
    prompt_items: int | None
    """Items of the prompt's memory block (memories + preferences + strategies)."""


@dataclass(frozen=True, slots=True)
class Exploration:
    """ε-greedy exploration of load_strategies."""

    explored: bool
    epsilon: float | None
    skipped: str | None
    """The top strategy left out when exploring."""
    alternative: str | None
    """The strategy tried instead."""


@dataclass(frozen=True, slots=True)
class StrategyConflict:
    a: str
    b: str
    reason: str


@dataclass(frozen=True, slots=True)
class StrategyDecision:
    applied: tuple[str, ...]
    """Ids of the strategies placed in the prompt (after conflicts and exploration)."""
    exploration: Exploration | None
    conflicts: tuple[StrategyConflict, ...]
    weights: tuple[str, ...]
    """``id:weight`` of strategies whose weights this turn's signals updated."""


@dataclass(frozen=True, slots=True)
class ChatCall:
    span_name: str
    provider: str | None
    request_model: str | None
    response_model: str | None
    input_tokens: int | None
    output_tokens: int | None
    finish_reasons: tuple[str, ...]
    duration_ms: float
    status: str
    error: str | None


@dataclass(frozen=True, slots=True)
class RedlineDecision:
    verdict: str
    rules: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SignalSeen:
    """An implicit signal this turn revealed about an earlier one."""

    type: str
    target_event_id: str | None


@dataclass(frozen=True, slots=True)
class SpanError:
    span_name: str
    message: str | None
    error_type: str | None


@dataclass(frozen=True, slots=True)
class NodeStep:
    """One ``tianma.node <name>`` span and the spans inside it (chat, embeddings, searches)."""

    name: str
    span: StoredSpan
    offset_ms: float
    """Start, in ms after the turn started."""
    duration_ms: float
    status: str
    attributes: dict[str, Any]
    events: tuple[StoredEvent, ...]
    children: tuple[StoredSpan, ...]
    """Every span below the node, in start order."""


@dataclass(frozen=True, slots=True)
class TurnTree:
    """What one turn decided, node by node."""

    event_id: str
    trace_id: str
    root: StoredSpan
    """The ``invoke_agent tianma`` span (the topmost ancestor found when it is missing)."""
    user_id: str | None
    conversation_id: str | None
    start: datetime
    duration_ms: float
    status: str
    """Status of the turn span; see :attr:`errors` for failed spans inside it."""
    errors: tuple[SpanError, ...]
    nodes: tuple[NodeStep, ...]
    domain: str | None
    memories: MemoryFlow
    preferences: tuple[str, ...]
    """Ids of the resident preferences."""
    strategies: StrategyDecision
    chat: ChatCall | None
    redline: RedlineDecision | None
    signals: tuple[SignalSeen, ...]
    reflection_due: str | None
    """The reflection trigger this turn fired, if any."""
    folded_turns: int | None
    pii_redacted: tuple[str, ...]

    @property
    def error(self) -> str | None:
        """The first error inside the turn, if any."""
        return next((e.message or e.error_type or e.span_name for e in self.errors), None)

    def node(self, name: str) -> NodeStep | None:
        return next((n for n in self.nodes if n.name == name), None)


def _strs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return (str(value),)


def _floats(value: Any) -> tuple[float | None, ...]:
    items = value if isinstance(value, list | tuple) else ()
    return tuple(float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None for v in items)


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _opt_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _scored(ids: Any, scores: Any) -> tuple[ScoredId, ...]:
    values = _floats(scores)
    return tuple(ScoredId(i, values[n] if n < len(values) else None) for n, i in enumerate(_strs(ids)))


def _turn_root(event_span: StoredSpan, by_id: dict[str, StoredSpan]) -> StoredSpan:
    span = event_span
    while span.name != TURN_SPAN_NAME and span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
    return span


def _descendants(span_id: str, children: dict[str, list[StoredSpan]]) -> list[StoredSpan]:
    found: list[StoredSpan] = []
    stack = list(children.get(span_id, []))
    while stack:
        span = stack.pop()
        found.append(span)
        stack.extend(children.get(span.span_id, []))
    return sorted(found, key=lambda s: (s.start_ns, s.span_id))


def _node_name(span: StoredSpan) -> str | None:
    name = span.attributes.get(sc.TIANMA_NODE_NAME)
    if isinstance(name, str) and name:
        return name
    return span.name.removeprefix(sc.NODE_SPAN_PREFIX) if span.name.startswith(sc.NODE_SPAN_PREFIX) else None


def _chat(spans: Iterable[StoredSpan]) -> ChatCall | None:
    span = next((s for s in spans if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == "chat"), None)
    if span is None:
        return None
    a = span.attributes
    return ChatCall(
        span_name=span.name,
        provider=_opt_str(a.get(sc.GEN_AI_PROVIDER_NAME)),
        request_model=_opt_str(a.get(sc.GEN_AI_REQUEST_MODEL)),
        response_model=_opt_str(a.get(sc.GEN_AI_RESPONSE_MODEL)),
        input_tokens=_opt_int(a.get(sc.GEN_AI_USAGE_INPUT_TOKENS)),
        output_tokens=_opt_int(a.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)),
        finish_reasons=_strs(a.get(sc.GEN_AI_RESPONSE_FINISH_REASONS)),
        duration_ms=span.duration_ms,
        status=span.status,
        error=span.status_message if span.status == "ERROR" else None,
    )


def _strategies(
    load: dict[str, Any], load_events: Iterable[StoredEvent], capture: dict[str, Any]
) -> StrategyDecision:
    exploration = None
    if sc.TIANMA_STRATEGIES_EXPLORED in load or sc.TIANMA_STRATEGIES_EPSILON in load:
        exploration = Exploration(
            explored=bool(load.get(sc.TIANMA_STRATEGIES_EXPLORED)),
            epsilon=_opt_float(load.get(sc.TIANMA_STRATEGIES_EPSILON)),
            skipped=_opt_str(load.get(sc.TIANMA_STRATEGIES_SKIPPED)),
            alternative=_opt_str(load.get(sc.TIANMA_STRATEGIES_ALTERNATIVE)),
        )
    conflicts = tuple(
        StrategyConflict(
            str(e.attributes.get("a", "")),
            str(e.attributes.get("b", "")),
            str(e.attributes.get("reason", "")),
        )
        for e in load_events
        if e.name == sc.TIANMA_STRATEGIES_CONFLICT
    )
    applied = load.get(sc.TIANMA_STRATEGIES_APPLIED, load.get(sc.TIANMA_STRATEGIES_LOADED))
    return StrategyDecision(
        _strs(applied), exploration, conflicts, _strs(capture.get(sc.TIANMA_STRATEGIES_WEIGHTS))
    )


def _signals(value: Any) -> tuple[SignalSeen, ...]:
    found = []
    for item in _strs(value):
        kind, sep, target = item.partition(":")
        found.append(SignalSeen(kind, target if sep and target else None))
    return tuple(found)


def turn_tree(store: SpanStore, event_id: str) -> TurnTree | None:
    """The decisions of the turn that recorded ``event_id``; None when its spans are not stored."""
    trace_id = store.trace_of_event(event_id)
    if trace_id is None:
        return None
    spans = store.trace(trace_id)
    by_id = {s.span_id: s for s in spans}
    event_span = next((s for s in spans if s.attributes.get(sc.TIANMA_EVENT_ID) == event_id), None)
    if event_span is None:
        return None
    root = _turn_root(event_span, by_id)
    children: dict[str, list[StoredSpan]] = {}
    for span in spans:
        if span.parent_span_id is not None:
            children.setdefault(span.parent_span_id, []).append(span)
    inside = _descendants(root.span_id, children)
    nodes = tuple(
        NodeStep(
            name=name,
            span=s,
            offset_ms=(s.start_ns - root.start_ns) / 1e6,
            duration_ms=s.duration_ms,
            status=s.status,
            attributes=s.attributes,
            events=s.events,
            children=tuple(_descendants(s.span_id, children)),
        )
        for s in inside
        if (name := _node_name(s)) is not None
    )
    attrs: dict[str, dict[str, Any]] = {n.name: n.attributes for n in nodes}
    empty: dict[str, Any] = {}
    load = attrs.get("load_strategies", empty)
    retrieve = attrs.get("retrieve", empty)
    rerank = attrs.get("rerank", empty)
    generate = attrs.get("generate", empty)
    redline = attrs.get("redline_check", empty)
    capture = attrs.get("capture_signals", empty)
    load_node = next((n for n in nodes if n.name == "load_strategies"), None)
    kept = _scored(rerank.get(sc.TIANMA_KEPT_IDS), rerank.get(sc.TIANMA_KEPT_SCORES))
    memories = MemoryFlow(
        retrieved=_scored(retrieve.get(sc.TIANMA_RETRIEVED_IDS), retrieve.get(sc.TIANMA_RETRIEVED_SCORES)),
        kept=kept,
        dropped_count=_opt_int(rerank.get(sc.TIANMA_DROPPED_COUNT)),
        injected=tuple(k.id for k in kept),
        prompt_items=_opt_int(generate.get(sc.TIANMA_PROMPT_ITEMS)),
    )
    verdict = _opt_str(redline.get(sc.TIANMA_REDLINE_VERDICT))
    user_id = next((u for s in (root, *inside) if (u := _opt_str(s.attributes.get(sc.TIANMA_USER_ID)))), None)
    return TurnTree(
        event_id=event_id,
        trace_id=trace_id,
        root=root,
        user_id=user_id,
        conversation_id=_opt_str(root.attributes.get(sc.GEN_AI_CONVERSATION_ID)),
        start=root.start,
        duration_ms=root.duration_ms,
        status=root.status,
        errors=tuple(
            SpanError(s.name, s.status_message, _opt_str(s.attributes.get(sc.ERROR_TYPE)))
            for s in (root, *inside)
            if s.status == "ERROR"
        ),
        nodes=nodes,
        domain=_opt_str(load.get(sc.TIANMA_DOMAIN)),
        memories=memories,
        preferences=_strs(load.get(sc.TIANMA_PREFERENCES_LOADED)),
        strategies=_strategies(load, load_node.events if load_node else (), capture),
        chat=_chat(inside),
        redline=RedlineDecision(verdict, _strs(redline.get(sc.TIANMA_REDLINE_RULES))) if verdict else None,
        signals=_signals(capture.get(sc.TIANMA_SIGNALS)),
        reflection_due=_opt_str(capture.get(sc.TIANMA_REFLECTION_DUE)),
        folded_turns=_opt_int(capture.get(sc.TIANMA_WINDOW_FOLDED)),
        pii_redacted=_strs(capture.get(sc.TIANMA_PII_REDACTED)),
    )
