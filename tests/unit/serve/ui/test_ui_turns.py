"""Turns and the decision tree of each, from the local span store, with SQL when spans are missing."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.unit.serve.ui.conftest import ClientFactory
from tests.unit.serve.ui.seed import Seeded, seed_user, store_spans
from tianma import Runtime


def test_a_turns_decision_tree_from_its_spans(
    client: ClientFactory, rt: Runtime, spans: InMemorySpanExporter
) -> None:
    s = seed_user(rt, "alice")
    seed_user(rt, "bob")
    store_spans(rt, spans)
    alice = client("key-a")
    listing = alice.get("/ui/turns").text
    assert "来自本地追踪存储" in listing and f'href="/ui/turns/{s.disliked_turn}"' in listing
    assert "推荐一些零食吧" in listing and "芒果" not in listing
    tree = alice.get(f"/ui/turns/{s.disliked_turn}").text
    nodes = ["load_strategies", "retrieve", "rerank", "generate", "redline_check", "capture_signals"]
    positions = [tree.index(f". {n}</span>") for n in nodes]
    assert positions == sorted(positions)  # in the order they ran, each with its duration
    assert "决策树 Decision tree" in tree and " ms</span>" in tree
    assert "回答零食问题时先提醒花生过敏" in tree  # the strategy applied
    assert "未探索 not explored" in tree and "ε=0.00" in tree
    assert "喜欢花生味的零食" in tree  # the resident preference
    assert "检索 retrieved" in tree and "保留 kept" in tree and "注入 injected" in tree
    assert 'class="chip v-' in tree  # the redline verdict
    assert "later, about this reply" in tree and "dislike" in tree


def test_without_spans_the_turns_come_from_sql(client: ClientFactory, seeded: dict[str, Seeded]) -> None:
    alice, s = client("key-a"), seeded["alice"]
    listing = alice.get("/ui/turns").text
    assert "列出数据库里的对话轮" in listing and "我对花生过敏。" in listing and "推荐一些零食吧" in listing
    tree = alice.get(f"/ui/turns/{s.disliked_turn}").text
    assert "不在本地存储" in tree and "注入了什么 What was injected" in tree
    assert "喜欢花生味的零食" in tree and "回答零食问题时先提醒花生过敏" in tree and "dislike" in tree


def test_a_record_that_is_not_an_event_has_no_turn(client: ClientFactory, seeded: dict[str, Seeded]) -> None:
    assert client("key-a").get(f"/ui/turns/{seeded['alice'].preference}").status_code == 404


def test_turns_from_sql_are_paged_without_counting_them_all(
    client: ClientFactory, seeded: dict[str, Seeded], rt: Runtime
) -> None:
    for n in range(55):
        rt.chat("alice", f"第{n}个问题", dialogue_id="many")
    alice = client("key-a")
    first = alice.get("/ui/turns").text
    assert first.count('<td class="nowrap"><a href="/ui/turns/') == 50 and "下一页 Next" in first
    assert "共 " not in first  # the total is not counted
    second = alice.get("/ui/turns", source="sql", page="2").text
    assert second.count('<td class="nowrap"><a href="/ui/turns/') == 7 and "下一页 Next" not in second
