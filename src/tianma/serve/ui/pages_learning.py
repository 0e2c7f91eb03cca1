"""What the assistant learnt and how well: strategies, reflection runs (one-step undo), the learning curve."""

from __future__ import annotations

from datetime import timedelta

from starlette.responses import Response
from starlette.routing import BaseRoute

from tianma.errors import RecordNotFoundError
from tianma.memory.insights import last_turn_at, learning_curve, load_learning_facts, strategy_usage
from tianma.serve.ui import queries
from tianma.serve.ui.charts import Series, bar_chart, line_chart
from tianma.serve.ui.common import PER_PAGE, Page, Pager, Ui, ui_route
from tianma.serve.ui.pages_memory import STATUS_LABELS, describe_trigger
from tianma.storage.records import MemoryRecord

RANGES = {"30": 30, "90": 90, "365": 365, "all": None}
"""Days of activity the learning page covers (ending at the latest turn)."""
STRATEGY_ORDER = {"active": 0, "pending": 1, "disabled": 2, "inactive": 3, "deprecated": 4}


def strategies(page: Page) -> Response:
    """Every strategy of the user: trigger, weight, priority, zone, version, exploration and outcomes."""
    rt, user = page.runtime, page.viewer.user
    status = page.arg("status")
    records = rt.memories(user, "strategy")
    if status:
        records = [r for r in records if r.status == status]
    records.sort(key=lambda r: (STRATEGY_ORDER.get(r.status, 9), -_weight(r), r.created_at))
    contents = {r.id: r.content for r in rt.memories(user, "strategy")}
    return page.render(
        "strategies.html", rows=records, usage=strategy_usage(rt.store, user), weight=_weight,
        trigger=describe_trigger, conflicts=rt.strategy_conflicts(user), contents=contents, status=status,
        statuses=tuple(STRATEGY_ORDER), status_labels=STATUS_LABELS,
    )  # fmt: skip


def _weight(record: MemoryRecord) -> float:
    value = record.data.get("weight", record.confidence)
    return float(value) if isinstance(value, int | float) else record.confidence


def runs(page: Page) -> Response:
    """Reflection, maintenance, approval, rollback and edit runs, newest first."""
    pager = Pager(page.page_number(), 0)
    rows, total = queries.run_page(page.runtime.store, page.viewer.user, pager.offset, PER_PAGE)
    return page.render("runs.html", rows=rows, pager=Pager(pager.number, total))


def run(page: Page) -> Response:
    """One run: what it did item by item, and every record it changed."""
    store = page.runtime.store
    found = queries.get_run(store, page.request.path_params["run_id"])
    if found is None:
        raise RecordNotFoundError("no such run")
    page.owned(found.user_id)
    page = page.as_owner(found.user_id)
    changes = queries.run_changes(store, found.id)
    records = store.get_many(found.user_id, [c["record_id"] for c in changes])
    items = found.report.get("items") if isinstance(found.report.get("items"), list) else []
    return page.render("run.html", run=found, changes=changes, records=records, items=items)


def undo(page: Page) -> Response:
    found = queries.get_run(page.runtime.store, page.request.path_params["run_id"])
    if found is None:
        raise RecordNotFoundError("no such run")
    page.owned(found.user_id)
    page.runtime.undo_reflection(found.id)
    return page.as_owner(found.user_id).redirect(f"/runs/{found.id}", done="undone")


def learning(page: Page) -> Response:
    """Negative-signal rate, repeat rate and hit rate per local day (per week over long spans)."""
    store, user = page.runtime.store, page.viewer.user
    span = page.arg("days", "90")
    span = span if span in RANGES else "90"
    days = RANGES[span]
    last = last_turn_at(store, user)
    since = last - timedelta(days=days) if last is not None and days is not None else None
    curve = learning_curve(*load_learning_facts(store, user, since), zone=page.ui.zone)
    labels = [p.start.strftime("%m-%d") for p in curve.points]
    rates = line_chart(labels, [
        Series("负面信号率 negative-signal rate", "neg", tuple(p.negative_rate for p in curve.points)),
        Series("重复提问率 repeat rate", "rep", tuple(p.repeat_rate for p in curve.points)),
        Series("命中率 hit rate", "hit", tuple(p.hit_rate for p in curve.points)),
    ])  # fmt: skip
    volume = bar_chart(labels, [p.turns for p in curve.points], "对话轮 turns")
    return page.render("learning.html", curve=curve, rates=rates, volume=volume, span=span, ranges=RANGES)


def routes(ui: Ui) -> list[BaseRoute]:
    return [
        ui_route(ui, "/strategies", strategies, "ui_strategies"),
        ui_route(ui, "/runs", runs, "ui_runs"),
        ui_route(ui, "/runs/{run_id}", run, "ui_run"),
        ui_route(ui, "/runs/{run_id}/undo", undo, "ui_run_undo", methods=["POST"]),
        ui_route(ui, "/learning", learning, "ui_learning"),
    ]
