"""``tianma bench keyword`` with a PostgreSQL server: the runtime's PostgreSQL index measured
beside FTS5 and the sparse variants, each case in a database of its own, dropped after."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text

from tests.contract.conftest import PostgresCluster
from tests.unit.bench.test_keyword import _locomo
from tianma.bench import keyword
from tianma.bench.common import BenchContext


def test_the_postgres_variant_is_measured_like_the_others_and_leaves_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_cluster: PostgresCluster
) -> None:
    server = make_url(postgres_cluster.url).set(database="postgres").render_as_string(hide_password=False)
    monkeypatch.setenv(keyword.POSTGRES_URL_ENV, server)
    _locomo(tmp_path / "data" / "locomo")
    monkeypatch.setitem(keyword.PLANS, "smoke", keyword.KeywordPlan((200,), 5, None))
    payload = keyword.run(BenchContext(data=tmp_path / "data", out=tmp_path / "out", mode="smoke", show_progress=False))
    assert keyword.POSTGRES in payload["variants"] and keyword.POSTGRES in payload["speed"]
    case = payload["speed"][keyword.POSTGRES]["200"]
    assert case["user_texts"] == 20 and case["hits_mean"] > 0 and case["bytes_per_10k"] > 0
    assert 0 < case["search_ms"]["p50"] <= case["search_ms"]["p95"]
    for split in ("dev", "test"):  # the rare name finds its turn, as in FTS5
        assert payload["quality"][keyword.POSTGRES][split] == payload["quality"]["fts5"][split]
    assert f"| {keyword.POSTGRES_LABEL} |" in keyword.section(payload, tmp_path / "plots")
    admin = create_engine(server)
    with admin.connect() as conn:
        left = conn.execute(text("SELECT count(*) FROM pg_database WHERE datname LIKE 'tianma_bench_%'")).scalar_one()
    admin.dispose()
    assert left == 0
