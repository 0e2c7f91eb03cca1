"""Pending changes: why each waits, a before/after preview, its evidence; approve or reject."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from tianma.memory.reviews import get_review
from tianma.results import Review
from tianma.serve.ui.common import PER_PAGE, Page, Pager, Ui, ui_route
from tianma.serve.ui.pages_memory import KIND_LABELS

REVIEW_STATUSES = ("pending", "approved", "rejected")
STATUS_LABELS = {"pending": "待审核 pending", "approved": "已批准 approved", "rejected": "已拒绝 rejected",
                 "": "全部 all"}  # fmt: skip
ZONE_LABELS = {"forbidden": "禁区 forbidden", "caution": "谨慎 caution", "free": "自由 free"}


def reviews(page: Page) -> Response:
    """Pending changes oldest first (the queue); decided ones newest first."""
    rt, user = page.runtime, page.viewer.user
    status = page.arg("status", "pending")
    status = status if status in REVIEW_STATUSES else ""
    rows = rt.reviews(user, status or None)
    if status != "pending":
        rows.reverse()
    pager = Pager(page.page_number(), len(rows))
    shown = rows[pager.offset : pager.offset + PER_PAGE]
    evidence = rt.store.get_many(user, sorted({e for r in shown for e in r.evidence}))
    return page.render(
        "reviews.html", rows=[_with_diff(r) for r in shown], pager=pager, status=status, evidence=evidence,
        statuses=("pending", "approved", "rejected", ""), status_labels=STATUS_LABELS, zone_labels=ZONE_LABELS,
        kind_labels=KIND_LABELS,
    )  # fmt: skip


def _with_diff(review: Review) -> dict[str, Any]:
    """The review's fields with ``added`` and ``removed``: what the change would add to or drop
    from the active records it is compared with."""
    preview = review.preview
    before = [str(x) for x in preview.get("before") or []]
    after = [str(x) for x in preview.get("after") or []]
    return {**review.as_dict(), "before": before, "after": after, "added": [x for x in after if x not in before],
            "removed": [x for x in before if x not in after], "scope": preview.get("scope", "")}  # fmt: skip


def _decide(page: Page, approve: bool) -> Response:
    review = get_review(page.runtime.store, page.request.path_params["review_id"])
    page.owned(review["user_id"])
    reason = page.form.get("reason", "").strip()[:500]
    if approve:
        page.runtime.approve(review["id"], reason)
    else:
        page.runtime.reject(review["id"], reason)
    return page.as_owner(review["user_id"]).redirect("/reviews", done="approved" if approve else "rejected")


def approve(page: Page) -> Response:
    return _decide(page, approve=True)


def reject(page: Page) -> Response:
    return _decide(page, approve=False)


def routes(ui: Ui) -> list[BaseRoute]:
    return [
        ui_route(ui, "/reviews", reviews, "ui_reviews"),
        ui_route(ui, "/reviews/{review_id}/approve", approve, "ui_review_approve", methods=["POST"]),
        ui_route(ui, "/reviews/{review_id}/reject", reject, "ui_review_reject", methods=["POST"]),
    ]
