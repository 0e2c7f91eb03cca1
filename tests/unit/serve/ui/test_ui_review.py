"""Pending changes: before/after preview and evidence, approve and reject, each decided once."""

from __future__ import annotations

from tests.unit.serve.ui.conftest import ClientFactory
from tests.unit.serve.ui.seed import Seeded
from tianma import Runtime


def test_a_pending_change_shows_why_a_preview_and_its_evidence(
    client: ClientFactory, seeded: dict[str, Seeded]
) -> None:
    page = client("key-a").get("/ui/reviews").text
    s = seeded["alice"]
    assert f'id="review-{s.review}"' in page and "推荐零食时避开花生" in page
    assert "caution zone: changes how answers are given" in page and "谨慎 caution" in page
    assert '<li class="add">推荐零食时避开花生</li>' in page  # the after side marks what is added
    assert "之前 Before" in page and "“我对花生过敏。”" in page
    assert "批准 Approve" in page and "拒绝 Reject" in page


def test_approving_activates_and_the_decision_stays_visible(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice, s = client("key-a"), seeded["alice"]
    done = alice.post(f"/ui/reviews/{s.review}/approve", reason="可以")
    assert done.headers["location"] == "/ui/reviews?done=approved"
    assert "已批准 Approved" in alice.get("/ui/reviews", done="approved").text
    assert rt.pending("alice") == [] and rt.memory.store.get(s.review_record).status == "active"
    decided = alice.get("/ui/reviews", status="approved").text
    assert "推荐零食时避开花生" in decided and "可以" in decided and "批准 Approve" not in decided
    again = alice.post(f"/ui/reviews/{s.review}/approve")
    assert again.status_code == 400 and "already approved" in again.text


def test_rejecting_disables_with_the_reason(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice, s = client("key-a"), seeded["alice"]
    assert alice.post(f"/ui/reviews/{s.review}/reject", reason="不需要").status_code == 303
    record = rt.memory.store.get(s.review_record)
    assert record.status == "disabled" and "不需要" in rt.history(record.id)[0].change_reason
    assert "不需要" in alice.get("/ui/reviews", status="all").text
