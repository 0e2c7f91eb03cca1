"""``tianma bench vectors --smoke``: every layout is measured, written and reported."""

from __future__ import annotations

import json
from pathlib import Path

from tianma.bench import vectors
from tianma.bench.common import BenchContext


def test_vectors_bench_smoke_measures_every_layout(tmp_path: Path) -> None:
    payload = vectors.run(BenchContext(data=None, out=tmp_path, mode="smoke", show_progress=False))
    plan = vectors.PLANS["smoke"]
    cases = payload["cases"]
    assert set(cases) == set(vectors.CASES)
    for case in cases.values():
        assert case["search_ms"]["n"] == plan.queries
        assert 0 < case["search_ms"]["p50"] <= case["search_ms"]["p95"]
        assert case["upsert_points_per_s"] > 0 and case["source_first"] > 0.9
    assert cases["shared_one_user"]["points"] == plan.points
    assert (
        cases["shared_ten_users"]["user_points"]
        == cases["own_shard"]["points"]
        == plan.points // vectors.USERS
    )
    assert cases["qdrant_local"]["points"] == plan.legacy_points
    assert cases["shared_one_user"]["compact_s"] > 0 and payload["choice"]
    written = json.loads(Path(payload["file"]).read_text(encoding="utf-8"))
    assert written["benchmark"] == "vectors" and written["dim"] == vectors.DIM
    assert not any((tmp_path / "cache").iterdir())  # the shards were removed
    text = vectors.section(payload, tmp_path / "plots")
    assert "| layout |" in text
    for label in vectors.CASES.values():
        assert f"| {label} |" in text
