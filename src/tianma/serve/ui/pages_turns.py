"""Turns and the decision tree of each, read from the local span store (no tracing backend needed).

The tree of a turn comes from its stored spans (``<home>/spans.db``, ``telemetry.local_store``);
when they are missing (local store off, pruned, or a turn from before) the page still shows what
SQL knows: the message, the reply, what was injected and the signals about it.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import Response
from starlette.routing import BaseRoute

from tianma.errors import RecordNotFoundError
from tianma.serve.ui import queries
from tianma.serve.ui.common import PER_PAGE, Page, Pager, Ui, ui_route
from tianma.telemetry.span_store import SpanStore
from tianma.telemetry.turn_tree import TurnTree, turn_tree

INJECTION_ROLES = {"memory": "记忆 memory", "strategy": "策略 strategy", "preference": "偏好 preference"}


def _spans(page: Page) -> SpanStore:
    return SpanStore(page.runtime.settings.spans_target)


def turns(page: Page) -> Response:
    """The user's latest turns from the span store; from SQL (every turn, paged) when it has
    none or when asked (``?source=sql``)."""
    store, user = page.runtime.store, page.viewer.user
    summaries = [] if page.arg("source") == "sql" else _spans(page).recent_turns(user, PER_PAGE)
    if summaries:
        events = store.get_many(user, [s.event_id for s in summaries if s.event_id])
        return page.render("turns.html", source="spans", summaries=summaries, events=events, rows=[],
                           pager=Pager(1, len(summaries)))  # fmt: skip
    pager = Pager(page.page_number(), 0)
    rows = queries.turn_page(store, user, pager.offset, PER_PAGE + 1)
    # one extra row says whether there is a next page without counting every turn
    pager = Pager(pager.number, pager.offset + len(rows), exact=False)
    return page.render("turns.html", source="sql", summaries=[], events={}, rows=rows[:PER_PAGE], pager=pager)


def turn(page: Page) -> Response:
    """One turn: nodes in order with durations, memories retrieved → kept → injected,
    strategies (explored or not), the redline verdict, the signals."""
    event = page.record(page.request.path_params["event_id"])
    if event.kind != "event":
        raise RecordNotFoundError("not a turn")
    page = page.as_owner(event.user_id)
    store = page.runtime.store
    tree = turn_tree(_spans(page), event.id)
    if tree is not None and tree.user_id not in (None, event.user_id):
        tree = None  # spans of someone else's turn under this id: never show them
    injections = store.injections_of(event.id)
    judging, revealed = queries.signals_about(store, event)
    wanted = {row["record_id"] for row in injections} | _ids_in(tree)
    wanted |= {str(s.data.get("target_event_id")) for s in revealed if s.data.get("target_event_id")}
    records = store.get_many(event.user_id, sorted(wanted))
    total = tree.duration_ms if tree is not None and tree.duration_ms > 0 else 1.0
    return page.render(
        "turn.html", event=event, tree=tree, injections=injections, records=records, judging=judging,
        revealed=revealed, total_ms=total, roles=INJECTION_ROLES, flow=memory_flow(tree),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class FlowRow:
    """One memory candidate of a turn: found by retrieval, then kept by rerank (or dropped)."""

    id: str
    retrieved: float | None
    kept: float | None
    injected: bool


def memory_flow(tree: TurnTree | None) -> list[FlowRow]:
    """Retrieved → kept → injected, one row per candidate, in retrieval order."""
    if tree is None:
        return []
    flow = tree.memories
    kept = {k.id: k.score for k in flow.kept}
    rows = [FlowRow(r.id, r.score, kept.get(r.id), r.id in flow.injected) for r in flow.retrieved]
    seen = {r.id for r in flow.retrieved}
    rows += [FlowRow(k.id, None, k.score, k.id in flow.injected) for k in flow.kept if k.id not in seen]
    return rows


def _ids_in(tree: TurnTree | None) -> set[str]:
    """Every record id the tree mentions (their contents are looked up for display)."""
    if tree is None:
        return set()
    ids = {s.id for s in (*tree.memories.retrieved, *tree.memories.kept)}
    ids |= set(tree.preferences) | set(tree.strategies.applied)
    exploration = tree.strategies.exploration
    if exploration is not None:
        ids |= {x for x in (exploration.skipped, exploration.alternative) if x}
    ids |= {x for c in tree.strategies.conflicts for x in (c.a, c.b)}
    ids |= {s.target_event_id for s in tree.signals if s.target_event_id}
    return ids


def routes(ui: Ui) -> list[BaseRoute]:
    return [
        ui_route(ui, "/turns", turns, "ui_turns"),
        ui_route(ui, "/turns/{event_id}", turn, "ui_turn"),
    ]
