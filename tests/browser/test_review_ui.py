"""The review UI in real headless Chromium: sign in, approve, roll back, edit, forget, undo, the
decision tree of a turn; a full-page screenshot of every page visited (test-artifacts/screenshots)."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.browser.conftest import Site
from tianma.telemetry.span_store import SqlSpanExporter


def test_every_page_renders_in_chinese_and_english(site: Site) -> None:
    site.login("key-a", shot="login")
    page, alice = site.page, site.seeded["alice"]
    assert page.locator("h1").first.inner_text().startswith("概览 Overview")
    site.shot("overview")
    visits = {
        "memories": ("/ui/memories", "喜欢花生味的零食"),
        "memory-strategy": (f"/ui/memories/{alice.strategy}", "edited by the user: 更具体"),
        "memory-event": (f"/ui/memories/{alice.disliked_turn}", "推荐一些零食吧"),
        "reviews": ("/ui/reviews", "推荐零食时避开花生"),
        "strategies": ("/ui/strategies", "回答零食问题时先提醒花生过敏，再推荐"),
        "runs": ("/ui/runs", "manual"),
        "run": (f"/ui/runs/{alice.run_id}", "用户对花生过敏"),
        "learning": ("/ui/learning", "命中率 Hit rate"),
        "turns": ("/ui/turns", "我对花生过敏。"),
        "turn-from-sql": (f"/ui/turns/{alice.disliked_turn}", "注入了什么 What was injected"),
    }
    for name, (path, text) in visits.items():
        site.go(path)
        body = page.inner_text("body")
        assert text in body, name
        assert "芒果" not in body, name  # never bob's data
        assert page.locator("header.top nav a").count() == 6
        site.shot(name)
    site.go("/ui/learning")
    assert page.locator("svg.chart polyline").count() >= 2


def test_approve_a_pending_change(site: Site) -> None:
    site.login("key-a")
    page, alice = site.page, site.seeded["alice"]
    site.go("/ui/reviews")
    card = page.locator(f"#review-{alice.review}")
    assert "+ " in card.locator("li.add").evaluate("e => getComputedStyle(e, '::before').content")
    card.locator("input[name=reason]").fill("看起来不错")
    site.shot("review-before-approve")
    card.locator("[data-test=approve]").click()
    page.wait_for_url("**/ui/reviews?done=approved")
    assert "已批准 Approved" in page.inner_text(".flash")
    assert page.locator(f"#review-{alice.review}").count() == 0
    site.shot("review-approved")
    assert site.runtime.memory.store.get(alice.review_record).status == "active"
    site.go("/ui/reviews?status=approved")
    assert "看起来不错" in page.inner_text(f"#review-{alice.review}")


def test_roll_back_a_strategy(site: Site) -> None:
    site.login("key-a")
    page, alice = site.page, site.seeded["alice"]
    site.go(f"/ui/memories/{alice.strategy}")
    site.shot("strategy-history")
    page.click("[data-test=rollback-1]")
    page.wait_for_url(f"**/ui/memories/{alice.strategy}?done=rolled_back")
    assert "已回滚" in page.inner_text(".flash")
    assert page.inner_text("#current-content") == "回答零食问题时先提醒花生过敏"
    assert "rolled back to version 1" in page.inner_text("table.history")
    site.shot("strategy-rolled-back")
    record = site.runtime.memory.store.get(alice.strategy)
    assert (record.content, record.version) == ("回答零食问题时先提醒花生过敏", 3)
    site.go("/ui/strategies")  # the list's quick rollback restores the previous version again
    page.locator("tr", has_text="回答零食问题时先提醒花生过敏").locator("[data-test=rollback]").click()
    page.wait_for_url("**done=rolled_back")
    assert site.runtime.memory.store.get(alice.strategy).content == "回答零食问题时先提醒花生过敏，再推荐"


def test_edit_a_memory_and_see_the_new_version(site: Site) -> None:
    site.login("key-a")
    page, alice = site.page, site.seeded["alice"]
    site.go(f"/ui/memories/{alice.preference}")
    page.fill("#content", "喜欢抹茶味的零食")
    page.fill("#reason", "口味变了")
    page.click(".edit-form button[type=submit]")
    page.wait_for_url(f"**/ui/memories/{alice.preference}?done=edited")
    assert page.inner_text("#current-content") == "喜欢抹茶味的零食"
    history = page.inner_text("table.history")
    assert "edited by the user: 口味变了" in history and "喜欢花生味的零食" in history
    site.shot("memory-edited")
    assert [m.content for m in site.runtime.search("alice", "抹茶味的零食", k=1)] == ["喜欢抹茶味的零食"]


def test_forget_a_memory_and_see_it_gone(site: Site) -> None:
    site.login("key-a")
    page, alice, rt = site.page, site.seeded["alice"], site.runtime
    assert alice.preference in [m.id for m in rt.search("alice", "花生味的零食", k=5)]
    site.go(f"/ui/memories/{alice.preference}")
    page.click("text=彻底删除 Forget…")
    page.wait_for_url(f"**/ui/memories/{alice.preference}/forget*")
    site.shot("forget-confirm")
    page.click("button.danger")
    page.wait_for_url("**/ui/memories?done=forgotten")
    assert "已彻底删除" in page.inner_text(".flash")
    assert "喜欢花生味的零食" not in page.inner_text("main")
    site.shot("memories-after-forget")
    site.go("/ui/memories?q=花生味的零食")
    assert "喜欢花生味的零食" not in page.inner_text("main")
    site.shot("search-after-forget")
    assert alice.preference not in [r.id for r in rt.memories("alice")]
    assert alice.preference not in [m.id for m in rt.search("alice", "花生味的零食", k=5)]


def test_undo_a_reflection_run(site: Site) -> None:
    site.login("key-a")
    page, alice = site.page, site.seeded["alice"]
    site.go(f"/ui/runs/{alice.run_id}")
    site.shot("run-before-undo")
    page.click("[data-test=undo]")
    page.wait_for_url(f"**/ui/runs/{alice.run_id}?done=undone")
    assert "已撤销整次运行" in page.inner_text(".flash") and "已撤销 This run was undone" in page.inner_text(
        "main"
    )
    site.shot("run-undone")
    assert alice.pending_fact not in [r.id for r in site.runtime.memories("alice")]


def test_the_decision_tree_of_a_turn(site: Site, spans: InMemorySpanExporter) -> None:
    rt = site.runtime
    turn = rt.chat("alice", "有什么零食推荐？", dialogue_id="alice-d3")
    exporter = SqlSpanExporter(rt.settings.spans_path)  # what serve's local span store does
    exporter.export(spans.get_finished_spans())
    exporter.shutdown()
    site.login("key-a")
    page = site.page
    site.go("/ui/turns")
    assert "来自本地追踪存储" in page.inner_text("main")
    site.shot("turns")
    page.click(f"a[href*='/ui/turns/{turn.event_id}']")
    page.wait_for_url(f"**/ui/turns/{turn.event_id}*")
    names = page.locator("ol.timeline .node-name").all_inner_texts()
    assert [n.split(". ", 1)[1] for n in names] == [
        "load_strategies", "retrieve", "rerank", "generate", "redline_check", "capture_signals"]  # fmt: skip
    tree = page.inner_text("ul.tree")
    assert (
        "回答零食问题时先提醒花生过敏，再推荐" in tree
        and "喜欢花生味的零食" in tree
        and "红线 Redline" in tree
    )
    site.shot("turn-tree")


def test_an_admin_switches_between_users(site: Site) -> None:
    site.login("key-admin")
    page = site.page
    site.go("/ui/memories")
    page.select_option("#user-select", "bob")
    page.click(".who button[type=submit]")
    page.wait_for_url("**user=bob*")
    body = page.inner_text("main")
    assert "喜欢芒果味的零食" in body and "花生" not in body
    site.shot("admin-bob-memories")
