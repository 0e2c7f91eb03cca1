"""忘记我 Forget me (``/ui/forget-me``): the records that would go, a box to tick, then all of them
gone — the viewer's own, or, for an admin, the user they picked; nobody else's."""

from __future__ import annotations

import re

from tests.unit.serve.ui.conftest import ClientFactory
from tests.unit.serve.ui.seed import Seeded
from tianma import Runtime


def shown(html: str, kind: str) -> int:
    """The count the confirmation page shows for ``kind`` (or ``total``)."""
    found = re.search(rf'data-kind="{kind}">(?:<strong>)?(\d+)<', html)
    assert found is not None, f"no count for {kind}"
    return int(found.group(1))


def by_kind(rt: Runtime, user: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in rt.memories(user):
        counts[record.kind] = counts.get(record.kind, 0) + 1
    return counts


def test_the_overview_links_to_a_confirmation_with_the_counts(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice = client("key-a")
    assert 'href="/ui/forget-me"' in alice.get("/ui/").text and "忘记我 Forget me" in alice.get("/ui/").text
    page = alice.get("/ui/forget-me")
    assert page.status_code == 200 and "忘记关于 alice 的一切？" in page.text
    assert 'name="confirm" value="yes"' in page.text and 'action="/ui/forget-me"' in page.text
    counts = by_kind(rt, "alice")
    assert counts["event"] >= 2 and counts["strategy"] == 2
    for kind in ("event", "fact", "preference", "experience", "strategy", "signal"):
        assert shown(page.text, kind) == counts.get(kind, 0), kind
    assert shown(page.text, "total") == len(rt.memories("alice"))
    assert "bob" not in page.text and "芒果" not in page.text
    assert "管理员" not in page.text  # her own data: no admin warning


def test_a_post_without_the_box_ticked_deletes_nothing(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice = client("key-a")
    before = len(rt.memories("alice"))
    for data in ({}, {"confirm": ""}, {"confirm": "no"}, {"confirm": "on"}):
        again = alice.post("/ui/forget-me", **data)
        assert (
            again.status_code == 400
            and "没有删除任何内容" in again.text
            and "Nothing was deleted" in again.text
        )
        assert 'name="confirm" value="yes"' in again.text and shown(again.text, "total") == before
    assert len(rt.memories("alice")) == before
    stale = alice.http.post("/ui/forget-me", data={"token": "0" * 64, "confirm": "yes"})
    assert stale.status_code == 403 and len(rt.memories("alice")) == before  # a form from another site


def test_forgetting_deletes_every_record_of_the_viewer_only(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice = client("key-a")
    before, bobs = len(rt.memories("alice")), len(rt.memories("bob"))
    done = alice.post("/ui/forget-me", confirm="yes")
    assert done.status_code == 303
    assert done.headers["location"] == f"/ui/?done=forgot_user&forgotten={before}"
    assert rt.memories("alice") == [] and rt.search("alice", "花生味的零食", k=5) == []
    overview = alice.http.get(done.headers["location"]).text
    assert (
        f"已彻底删除用户 alice 的 {before} 条记录" in overview
        and f"{before} records really deleted" in overview
    )
    assert (
        len(rt.memories("bob")) == bobs
        and rt.memory.store.get(seeded["bob"].preference).content == "喜欢芒果味的零食"
    )
    assert shown(alice.get("/ui/forget-me").text, "total") == 0
    forged = alice.get("/ui/", done="forgot_user", forgotten="<b>9</b>").text  # only a number is shown
    assert "&lt;b&gt;" not in forged and "<b>9</b>" not in forged and "已彻底删除这个用户的全部记录" in forged


def test_a_user_cannot_forget_someone_else(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice = client("key-a")
    bobs = len(rt.memories("bob"))
    page = alice.http.get("/ui/forget-me?user=bob")  # ?user= is an admin's: alice still sees her own
    assert "忘记关于 alice 的一切？" in page.text and "bob" not in page.text
    done = alice.http.post("/ui/forget-me?user=bob", data={"token": alice.token(), "confirm": "yes"})
    assert done.status_code == 303 and "bob" not in done.headers["location"]
    assert rt.memories("alice") == [] and len(rt.memories("bob")) == bobs  # her own went, not his


def test_an_admin_forgets_the_user_they_picked(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    admin = client("key-admin")
    alices, bobs = len(rt.memories("alice")), len(rt.memories("bob"))
    assert 'href="/ui/forget-me?user=bob"' in admin.get("/ui/", user="bob").text
    page = admin.get("/ui/forget-me", user="bob").text
    assert "忘记关于 bob 的一切？" in page and "管理员" in page and "not your own" in page
    assert 'action="/ui/forget-me?user=bob"' in page and shown(page, "total") == bobs
    assert admin.http.post("/ui/forget-me?user=bob", data={"token": admin.token()}).status_code == 400
    assert len(rt.memories("bob")) == bobs
    done = admin.http.post("/ui/forget-me?user=bob", data={"token": admin.token(), "confirm": "yes"})
    assert done.headers["location"] == f"/ui/?done=forgot_user&forgotten={bobs}&user=bob"
    assert rt.memories("bob") == [] and len(rt.memories("alice")) == alices
    after = admin.http.get(done.headers["location"]).text
    assert "已彻底删除用户 bob 的" in after and '<option value="bob" selected' in after
