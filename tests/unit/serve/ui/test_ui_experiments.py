"""The experiments page: an admin sees each arm's outcomes; a user does not see the page."""

from __future__ import annotations

import re
from datetime import timedelta

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.unit.serve.ui.conftest import ClientFactory
from tests.unit.serve.ui.seed import T0, store_spans
from tianma import Runtime


def test_an_admin_sees_each_arms_units_turns_and_rates(
    client: ClientFactory, rt: Runtime, spans: InMemorySpanExporter
) -> None:
    admin = client("key-admin")
    assert "还没有实验 No experiments yet" in admin.get("/ui/experiments").text
    rt.start_experiment("mmr-ui", ["mmr=rerank:rerank_mmr"], at=T0)
    turns = [rt.chat(f"user{i}", "推荐一本书", dialogue_id=f"e{i}", at=T0 + timedelta(minutes=i)) for i in range(8)]
    store_spans(rt, spans)  # as serve does with telemetry.local_store: latency comes from the turn spans
    page = admin.get("/ui/experiments").text
    assert "mmr-ui" in page and "运行中 running" in page and "rerank:rerank_mmr" in page
    shown = {arm: int(n) for arm, n in re.findall(r'<tr data-arm="(\w+)">\s*<td>\w+</td>\s*<td><code>[^<]*</code></td>\s*'
                                                   r'<td class="num">\d+</td>\s*<td class="num">(\d+)</td>', page)}  # fmt: skip
    served = {arm: sum(t.arm == arm for t in turns) for arm in ("baseline", "mmr")}
    assert shown == served and sum(shown.values()) == 8
    latencies = re.findall(r'(\d+) ms <small class="muted">\[(\d+), (\d+)\]</small>', page)  # median [interval]
    assert len(latencies) == sum(n > 0 for n in served.values())
    assert all(int(low) <= int(mid) <= int(high) for mid, low, high in latencies)
    assert 'href="/ui/experiments' in page  # in the admin's menu
    user = client("key-a")
    assert user.get("/ui/experiments").status_code == 404
    assert 'href="/ui/experiments' not in user.get("/ui/").text
    rt.stop_experiment("mmr-ui", at=T0 + timedelta(days=1))
    assert "已停止 stopped" in admin.get("/ui/experiments").text
