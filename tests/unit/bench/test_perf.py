"""The performance suite end to end in smoke mode: a well-formed payload, its JSON and its plots.

Speed is not asserted (the machine running the tests is not the benchmark machine).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tianma.bench import perf
from tianma.bench.common import BenchContext


def test_smoke_run_and_section(tmp_path: Path) -> None:
    ctx = BenchContext(data=None, out=tmp_path / "out", mode="smoke", show_progress=False)
    payload = perf.run(ctx)

    assert [s["size"] for s in payload["sizes"]] == [200]
    size = payload["sizes"][0]
    assert size["counts"]["records"] >= 200
    assert 0 < size["overhead_ms"]["p50"] <= size["overhead_ms"]["p95"]
    assert len(size["samples"]) == perf.PLANS["smoke"].turns.turns
    assert size["tokens"]["memory"]["p50"] > 0
    assert size["tokens"]["full_context"]["p50"] > size["tokens"]["memory"]["p50"]
    ingest = payload["ingest"][0]
    assert ingest["store"] == 0 and ingest["ratio"]["p50"] > 0
    assert ingest["ingest_events_per_s"]["p50"] > 0
    assert payload["rebuild"][0]["records"] >= 200
    assert set(payload["met"]) == {"overhead_p95_10k", "overhead_ratio", "ingest_ratio", "memory_tokens"}
    assert payload["met"]["overhead_p95_10k"] is None  # no 10k store in smoke mode
    for size in payload["sizes"]:  # the overhead against the embedder's own query time, same run
        assert size["embedder_query_ms"]["p50"] > 0
        assert size["overhead_ratio"] == pytest.approx(size["overhead_ms"]["p95"] / size["embedder_query_ms"]["p50"], abs=0.01)

    written = Path(payload["file"])
    assert written.is_file() and json.loads(written.read_text(encoding="utf-8"))["benchmark"] == "perf"

    markdown = perf.section(payload, ctx.plots)
    assert markdown.startswith("## ")
    for name in ("perf_overhead", "perf_tokens"):
        assert (ctx.plots / f"{name}.png").stat().st_size > 0
        assert f"(plots/{name}.png)" in markdown
