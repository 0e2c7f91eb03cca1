"""``tianma bench serve --smoke``: the proxy benchmark runs and accounts for every request."""

from __future__ import annotations

from pathlib import Path

from tianma.bench import serve
from tianma.bench.common import BenchContext


def test_serve_bench_smoke_measures_every_request(tmp_path: Path) -> None:
    payload = serve.run(BenchContext(data=None, out=tmp_path, mode="smoke", show_progress=False))
    plan = serve.PLANS["smoke"]
    assert payload["overhead"]["overhead_ms"]["n"] == plan.turns
    assert payload["streaming"]["added_first_ms"]["n"] == plan.streams
    assert payload["pastes"]["added_first_ms"]["n"] == plan.pastes and payload["pastes"]["chars"] == serve.PASTE_CHARS
    assert payload["load"]["turns"] == plan.clients * plan.turns_per_client
    # every proxied request became exactly one recorded turn (warm-up + the four parts)
    assert payload["events"] == 1 + plan.turns + plan.streams + plan.pastes + plan.clients * plan.turns_per_client
    assert Path(payload["file"]).is_file()
    text = serve.section(payload, tmp_path)
    assert "overhead per turn" in text and "30,000-character paste" in text and f"{payload['load']['turns_per_s']:.2f} turns/s" in text
