"""Memories: filters, search, paging, one record's history, edit, rollback and forget."""

from __future__ import annotations

import re
from datetime import timedelta

from tests.unit.serve.ui.conftest import ClientFactory
from tests.unit.serve.ui.seed import T0, Seeded
from tianma import Runtime
from tianma.storage.records import Provenance


def rows(html: str) -> int:
    return len(re.findall(r'<td class="content"><a href="/ui/memories/', html))


def test_filters_by_kind_and_status(client: ClientFactory, seeded: dict[str, Seeded]) -> None:
    alice = client("key-a")
    prefs = alice.get("/ui/memories", kind="preference").text
    assert rows(prefs) == 1 and "喜欢花生味的零食" in prefs
    pending = alice.get("/ui/memories", status="pending").text
    assert rows(pending) == 2 and "用户对花生过敏" in pending and "推荐零食时避开花生" in pending
    assert rows(alice.get("/ui/memories", kind="strategy", status="active").text) == 1
    assert rows(alice.get("/ui/memories", kind="bogus").text) == 7  # unknown filters are ignored


def test_search_by_meaning_and_by_text(client: ClientFactory, seeded: dict[str, Seeded]) -> None:
    page = client("key-a").get("/ui/memories", q="花生味").text
    assert "喜欢花生味的零食" in page and "语义 meaning" in page
    text_only = client("key-a").get("/ui/memories", q="避开花生").text  # a pending record: not indexed
    assert "推荐零食时避开花生" in text_only and "文字 text" in text_only


def test_long_lists_are_paged(client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime) -> None:
    for n in range(60):
        rt.memory.store.add_record("alice", "fact", f"第{n}条事实", Provenance(source="test"),
                                   at=T0 + timedelta(minutes=n))  # fmt: skip
    alice = client("key-a")
    first = alice.get("/ui/memories", kind="fact").text
    assert rows(first) == 50 and "第59条事实" in first and "下一页 Next" in first
    second = alice.get("/ui/memories", kind="fact", page="2").text
    assert rows(second) == 11 and "第0条事实" in second and "上一页 Previous" in second


def test_a_record_shows_every_version_with_reason_evidence_and_run(
    client: ClientFactory, seeded: dict[str, Seeded]
) -> None:
    alice, s = client("key-a"), seeded["alice"]
    strategy = alice.get(f"/ui/memories/{s.strategy}").text
    assert (
        "回答零食问题时先提醒花生过敏，再推荐" in strategy and "回答零食问题时先提醒花生过敏</td>" in strategy
    )
    assert "edited by the user: 更具体" in strategy and "keywords: 零食" in strategy
    assert "回滚到此版本 Roll back to v1" in strategy and "（当前 current）" in strategy
    fact = alice.get(f"/ui/memories/{s.pending_fact}").text
    assert f'href="/ui/runs/{s.run_id}"' in fact and "“我对花生过敏。”" in fact
    event = alice.get(f"/ui/memories/{s.disliked_turn}").text
    assert f'href="/ui/turns/{s.disliked_turn}"' in event and "dislike" in event
    assert "编辑 Edit" not in event  # the raw log is not editable


def test_editing_makes_a_new_version_and_reindexes(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    alice, pref = client("key-a"), seeded["alice"].preference
    done = alice.post(f"/ui/memories/{pref}/edit", content="喜欢抹茶味的零食", reason="口味变了")
    assert done.status_code == 303 and done.headers["location"] == f"/ui/memories/{pref}?done=edited"
    page = alice.get(f"/ui/memories/{pref}", done="edited").text
    assert "已保存为新版本" in page and "edited by the user: 口味变了" in page
    record = rt.memory.store.get(pref)
    assert (record.content, record.version) == ("喜欢抹茶味的零食", 2)
    assert pref in [m.id for m in rt.search("alice", "抹茶味的零食", k=3)]


def test_bad_edits_say_why(client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime) -> None:
    alice, s = client("key-a"), seeded["alice"]
    event = alice.post(f"/ui/memories/{s.fact_turn}/edit", content="改写历史")
    assert event.status_code == 400 and "only experience, fact, preference, strategy" in event.text
    empty = alice.post(f"/ui/memories/{s.preference}/edit", content="  ")
    assert empty.status_code == 400 and "empty" in empty.text
    assert rt.memory.store.get(s.fact_turn).content == "我对花生过敏。"


def test_rolling_back_to_a_version(client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime) -> None:
    alice, sid = client("key-a"), seeded["alice"].strategy
    done = alice.post(f"/ui/memories/{sid}/rollback", version="1")
    assert done.headers["location"] == f"/ui/memories/{sid}?done=rolled_back"
    record = rt.memory.store.get(sid)
    assert (record.content, record.version) == ("回答零食问题时先提醒花生过敏", 3)
    assert "rolled back to version 1" in alice.get(f"/ui/memories/{sid}").text
    assert alice.post(f"/ui/memories/{sid}/rollback", version="9").status_code == 404
    assert alice.post(f"/ui/memories/{sid}/rollback", version="x").status_code == 400


def test_forgetting_really_deletes(client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime) -> None:
    alice, pref = client("key-a"), seeded["alice"].preference
    confirm = alice.get(f"/ui/memories/{pref}/forget").text
    assert "彻底删除？" in confirm and "喜欢花生味的零食" in confirm
    assert pref in [m.id for m in rt.search("alice", "花生味的零食", k=5)]
    done = alice.post(f"/ui/memories/{pref}/forget")
    assert done.headers["location"] == "/ui/memories?done=forgotten"
    listing = alice.get("/ui/memories", done="forgotten").text
    assert "已彻底删除" in listing and "喜欢花生味的零食" not in listing
    assert pref not in [r.id for r in rt.memories("alice")]
    assert pref not in [m.id for m in rt.search("alice", "花生味的零食", k=5)]
    assert alice.get(f"/ui/memories/{pref}").status_code == 404
