"""Overview and memories: search and filters, one record with its full history, edit, forget, rollback;
forgetting a whole user ("forget me")."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from tianma.errors import InvalidInputError
from tianma.memory.edits import EDITABLE_KINDS
from tianma.memory.insights import strategy_usage
from tianma.memory.reviews import open_review_ids
from tianma.serve.ui import queries
from tianma.serve.ui.common import PER_PAGE, Page, Pager, Ui, ui_route
from tianma.storage.records import KINDS, STATUSES, MemoryRecord

KIND_LABELS = {
    "event": "消息 Message", "fact": "事实 Fact", "preference": "偏好 Preference",
    "experience": "经验 Experience", "strategy": "策略 Strategy", "signal": "信号 Signal",
}  # fmt: skip
STATUS_LABELS = {
    "active": "生效 active", "pending": "待定 pending", "inactive": "休眠 inactive",
    "deprecated": "已取代 deprecated", "disabled": "已停用 disabled",
}  # fmt: skip


def describe_trigger(trigger: Any) -> str:
    """``domains: food, tech · keywords: 喝 · hours: 22–6`` (or ``always``)."""
    if not isinstance(trigger, dict) or not any(trigger.values()):
        return "总是 always"
    parts = []
    for name, value in trigger.items():
        if not value:
            continue
        shown = ", ".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
        parts.append(f"{name}: {shown}")
    return " · ".join(parts)


def overview(page: Page) -> Response:
    """Counts per kind and status, what waits for review, the latest runs."""
    store, user = page.runtime.store, page.viewer.user
    counts = queries.record_counts(store, user)
    runs, _ = queries.run_page(store, user, limit=5)
    totals = _kind_totals(counts)
    return page.render(
        "overview.html", counts=counts, totals=totals, kinds=KINDS, statuses=STATUSES, kind_labels=KIND_LABELS,
        status_labels=STATUS_LABELS, pending=queries.pending_count(store, user), runs=runs, done=_forgot_user(page),
    )  # fmt: skip


def _kind_totals(counts: dict[tuple[str, str], int]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for (kind, _status), n in counts.items():
        totals[kind] = totals.get(kind, 0) + n
    return totals


def _forgot_user(page: Page) -> str | None:
    """After "forget me": how many records went (only a number comes from the URL)."""
    n = page.arg("forgotten")
    if page.arg("done") != "forgot_user" or not (n.isascii() and n.isdigit() and len(n) <= 12):
        return None
    user = page.viewer.user
    return f"已彻底删除用户 {user} 的 {int(n)} 条记录 Forgot user {user}: {int(n)} records really deleted"


def memories(page: Page) -> Response:
    """Newest first, filtered by kind and status; ``q`` searches by meaning (the turn's own
    retrieval) and by text."""
    rt, user = page.runtime, page.viewer.user
    kind = page.arg("kind") if page.arg("kind") in KINDS else ""
    status = page.arg("status") if page.arg("status") in STATUSES else ""
    q = page.arg("q")[:200]
    matched: dict[str, str] = {}
    if q:
        hits = rt.search(user, q, k=PER_PAGE)
        by_meaning = rt.store.get_many(user, [h.id for h in hits])
        rows = [by_meaning[h.id] for h in hits if h.id in by_meaning]
        matched = {h.id: f"语义 meaning {h.score:.2f}" for h in hits}
        text_rows, _ = queries.record_page(
            rt.store, user, kind=kind, status=status, text=q, limit=PER_PAGE
        )
        for r in text_rows:
            if r.id not in matched:
                rows.append(r)
                matched[r.id] = "文字 text"
        rows = [r for r in rows if (not kind or r.kind == kind) and (not status or r.status == status)]
        pager = Pager(1, len(rows[:PER_PAGE]))
        rows = rows[:PER_PAGE]
    else:
        pager = Pager(page.page_number(), 0)
        rows, total = queries.record_page(rt.store, user, kind=kind, status=status,
                                          offset=pager.offset, limit=PER_PAGE)  # fmt: skip
        pager = Pager(pager.number, total)
    return page.render(
        "memories.html", rows=rows, pager=pager, kind=kind, status=status, q=q, matched=matched,
        kinds=KINDS, statuses=STATUSES, kind_labels=KIND_LABELS, status_labels=STATUS_LABELS,
    )  # fmt: skip


def memory(page: Page) -> Response:
    """One record: its fields and provenance, every version with reason and evidence, and forms
    to edit it, roll it back to a version, or forget it."""
    record = page.record(page.request.path_params["record_id"])
    page = page.as_owner(record.user_id)
    rt, store = page.runtime, page.runtime.store
    history = rt.history(record.id)
    evidence_ids = {e for v in history for e in v.change_evidence} | set(record.provenance.event_ids)
    events = store.get_many(record.user_id, sorted(evidence_ids))
    usage = strategy_usage(store, record.user_id).get(record.id) if record.kind == "strategy" else None
    judging, revealed = queries.signals_about(store, record) if record.kind == "event" else ([], [])
    return page.render(
        "memory.html", record=record, history=history, events=events, usage=usage,
        editable=record.kind in EDITABLE_KINDS, review_id=open_review_ids(store, record.user_id).get(record.id),
        judging=judging, revealed=revealed, trigger=describe_trigger, kind_labels=KIND_LABELS, status_labels=STATUS_LABELS,
    )  # fmt: skip


def edit(page: Page) -> Response:
    record = page.record(page.request.path_params["record_id"])
    page.runtime.edit(record.id, page.form.get("content", ""), page.form.get("reason", ""))
    return page.as_owner(record.user_id).redirect(f"/memories/{record.id}", done="edited")


def rollback(page: Page) -> Response:
    record = page.record(page.request.path_params["record_id"])
    version = _version(page.form.get("version", ""))
    page.runtime.rollback(record.id, version)
    return page.as_owner(record.user_id).redirect(f"/memories/{record.id}", done="rolled_back")


def forget_confirm(page: Page) -> Response:
    record = page.record(page.request.path_params["record_id"])
    return page.as_owner(record.user_id).render("forget.html", record=record, kind_labels=KIND_LABELS)


def forget(page: Page) -> Response:
    record: MemoryRecord = page.record(page.request.path_params["record_id"])
    page.runtime.forget(record.user_id, record.id)
    return page.as_owner(record.user_id).redirect("/memories", done="forgotten")


FORGET_ME_CONFIRM = "confirm"
"""The checkbox a "forget me" form must have ticked (value ``yes``)."""


def forget_me_confirm(page: Page) -> Response:
    """What forgetting the viewed user deletes (their records per kind), and a form to confirm it."""
    return _forget_me_page(page)


def forget_me(page: Page) -> Response:
    """Forget the viewed user once the box is ticked; without it nothing is deleted and the
    question is asked again."""
    if page.form.get(FORGET_ME_CONFIRM) != "yes":
        message = "没有删除任何内容：请勾选确认框。Nothing was deleted: tick the box to confirm."
        return _forget_me_page(page, status_code=400, message=message)
    forgotten = page.runtime.forget(page.viewer.user)
    return page.redirect("/", done="forgot_user", forgotten=forgotten)


def _forget_me_page(page: Page, status_code: int = 200, message: str | None = None) -> Response:
    user = page.viewer.user
    totals = _kind_totals(queries.record_counts(page.runtime.store, user))
    return page.render(
        "forget_me.html", status_code=status_code, totals=totals, total=sum(totals.values()), kinds=KINDS,
        kind_labels=KIND_LABELS, message=message, own=user == page.viewer.principal.user_id,
    )  # fmt: skip


def _version(value: str) -> int | None:
    """A version number from a form; empty means the previous version."""
    if not value.strip():
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise InvalidInputError(f"not a version number: {value!r}") from exc


def routes(ui: Ui) -> list[BaseRoute]:
    return [
        ui_route(ui, "/", overview, "ui_home"),
        ui_route(ui, "/memories", memories, "ui_memories"),
        ui_route(ui, "/memories/{record_id}", memory, "ui_memory"),
        ui_route(ui, "/memories/{record_id}/edit", edit, "ui_memory_edit", methods=["POST"]),
        ui_route(ui, "/memories/{record_id}/rollback", rollback, "ui_memory_rollback", methods=["POST"]),
        ui_route(ui, "/memories/{record_id}/forget", forget_confirm, "ui_memory_forget_confirm"),
        ui_route(ui, "/memories/{record_id}/forget", forget, "ui_memory_forget", methods=["POST"]),
        ui_route(ui, "/forget-me", forget_me_confirm, "ui_forget_me_confirm"),
        ui_route(ui, "/forget-me", forget_me, "ui_forget_me", methods=["POST"]),
    ]
