"""A user's key never shows another user's data, in any page or action; an admin key sees all."""

from __future__ import annotations

from tests.unit.serve.ui.conftest import ClientFactory
from tests.unit.serve.ui.seed import Seeded
from tianma import Runtime

LISTS = ["/ui/", "/ui/memories", "/ui/memories?q=芒果", "/ui/memories?q=零食", "/ui/memories?status=pending",
         "/ui/reviews", "/ui/reviews?status=all", "/ui/strategies", "/ui/runs", "/ui/learning", "/ui/turns",
         "/ui/turns?source=sql"]  # fmt: skip


def test_every_list_shows_only_the_callers_data(client: ClientFactory, seeded: dict[str, Seeded]) -> None:
    alice = client("key-a")
    for path in LISTS:
        for asked in (path, path + ("&" if "?" in path else "?") + "user=bob"):  # ?user= is an admin's
            page = alice.http.get(asked)
            assert page.status_code == 200, asked
            shown = page.text.replace('value="芒果"', "").replace("“芒果”", "")  # the query itself
            assert "芒果" not in shown and "bob" not in shown, asked
    assert "花生" in alice.get("/ui/memories").text and "花生" in alice.get("/ui/strategies").text


def test_another_users_ids_are_not_found_and_untouched(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice, bob = client("key-a"), seeded["bob"]
    for path in (f"/ui/memories/{bob.preference}", f"/ui/memories/{bob.strategy}", f"/ui/memories/{bob.fact_turn}",
                 f"/ui/memories/{bob.preference}/forget", f"/ui/runs/{bob.run_id}", f"/ui/turns/{bob.fact_turn}",
                 "/ui/memories/no-such-id", "/ui/runs/no-such-run"):  # fmt: skip
        page = alice.http.get(path)
        assert page.status_code == 404 and "芒果" not in page.text, path
    actions = [
        (f"/ui/memories/{bob.strategy}/edit", {"content": "被篡改"}),
        (f"/ui/memories/{bob.strategy}/rollback", {"version": "1"}),
        (f"/ui/memories/{bob.preference}/forget", {}),
        (f"/ui/reviews/{bob.review}/approve", {}),
        (f"/ui/reviews/{bob.review}/reject", {}),
        (f"/ui/runs/{bob.run_id}/undo", {}),
    ]
    for path, data in actions:
        assert alice.post(path, **data).status_code == 404, path
    strategy = rt.memory.store.get(bob.strategy)
    assert strategy.version == 2 and "芒果" in strategy.content
    assert rt.memory.store.get(bob.preference).content == "喜欢芒果味的零食"
    assert [r.id for r in rt.pending("bob")] == [bob.review]
    assert rt.memory.store.get(bob.pending_fact).status == "pending"  # the run was not undone


def test_an_admin_chooses_any_user_and_follows_any_id(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    admin, bob = client("key-admin"), seeded["bob"]
    page = admin.get("/ui/memories", user="bob")
    assert "喜欢芒果味的零食" in page.text and "花生" not in page.text
    assert '<option value="alice"' in page.text and '<option value="bob" selected' in page.text
    assert "花生" in admin.get("/ui/memories", user="alice").text
    detail = admin.get(f"/ui/memories/{bob.strategy}")  # no ?user=: the id says whose it is
    assert detail.status_code == 200 and '<option value="bob" selected' in detail.text
    done = admin.post(f"/ui/reviews/{bob.review}/approve", reason="admin ok")
    assert done.status_code == 303 and "user=bob" in done.headers["location"]
    assert rt.pending("bob") == [] and rt.memory.store.get(bob.review_record).status == "active"
