"""``tianma bench import`` in smoke mode: a reproducible history, a well-formed payload.

Speed is not asserted (the machine running the tests is not the benchmark machine)."""

from __future__ import annotations

import json
from pathlib import Path

from tianma.bench import importing
from tianma.bench.common import BenchContext
from tianma.importing import chatgpt


def test_the_history_is_a_chatgpt_export_of_the_asked_size_and_the_same_for_a_seed() -> None:
    data = importing.history(300)
    assert data == importing.history(300) and data != importing.history(300, seed=1)
    parsed = chatgpt.parse(data)
    assert len(parsed.messages) == 300 and parsed.problems == []
    users = [m.text for m in parsed.messages if m.role == "user"]
    assert any(t.endswith("？") or t.endswith("?") for t in users)  # mostly questions
    assert sum(t in importing.SECRETS + importing.PLANTED for t in users) >= 1


def test_smoke_run(tmp_path: Path) -> None:
    payload = importing.run(BenchContext(data=None, out=tmp_path, mode="smoke", show_progress=False))
    run = payload["runs"][0]
    assert run["messages"] == 400 and run["turns"] == 200 and run["events"] + run["rejected"] == 200
    assert 0 < run["searchable"] < run["events"]  # the write filter keeps some, not all
    assert run["day_summaries"] > 0 and run["reflections"] == 2
    assert set(run["stages_s"]) >= {"parse", "storing / 写入", "learning / 学习"}
    assert payload["embedding_share"] > 0 and payload["met"] in (True, False)
    assert json.loads(Path(payload["file"]).read_text(encoding="utf-8"))["benchmark"] == "import"
