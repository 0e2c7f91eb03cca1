"""``tianma migrate --to``: a SQLite home moved to PostgreSQL is the same home — every table
compared equal, the same memories, keyword search there, an open dialogue's window carried over,
both indexes consistent with SQL; a home in use, or a database that holds data, is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from tests.conftest import RuntimeFactory
from tests.fakes import ScriptedChatModel
from tianma.text.tokenize import tokenize

T0 = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)
CLI = [sys.executable, "-c", "from tianma.cli import main; main()"]


def test_a_sqlite_home_moves_to_postgres_whole(make_runtime: RuntimeFactory, postgres_url: str) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的。"]))
    rt.chat("li", "以后回答先给结论。", dialogue_id="d1", at=T0)
    rt.chat("li", "我家的猫叫 Quokkabelle。", dialogue_id="d1", at=T0 + timedelta(minutes=1))
    rt.end_dialogue("d1", at=T0 + timedelta(minutes=2))
    liked = rt.chat("li", "推荐一本书", dialogue_id="d2", at=T0 + timedelta(days=1))
    rt.feedback(liked.event_id, "like", at=T0 + timedelta(days=1, minutes=1))
    rt.chat("wang", "I prefer metric units, always.", dialogue_id="w1", at=T0)
    rt.reflect(at=T0 + timedelta(days=2))
    before = {u: sorted((m.id, m.kind, m.content, m.status) for m in rt.memories(u)) for u in ("li", "wang")}
    home = rt.settings.home
    rt.close()

    env = {**os.environ, "TIANMA_HOME": str(home), "TIANMA_EMBEDDER__THREADS": "1"}
    done = subprocess.run([*CLI, "migrate", "--to", postgres_url], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NO" not in done.stdout and "records" in done.stdout and "dialogue window(s) carried over" in done.stdout

    model = ScriptedChatModel(replies=["好的。"])
    moved = make_runtime(chat_model=model, sql={"url": postgres_url}, name="home")
    after = {u: sorted((m.id, m.kind, m.content, m.status) for m in moved.memories(u)) for u in ("li", "wang")}
    assert after == before and before["li"]
    assert all(not (d.missing_vectors or d.missing_keywords or d.orphan_vectors or d.orphan_keywords)
               for d in moved.check_index())  # fmt: skip
    assert moved.search("li", "Quokkabelle")  # found there, by keyword and vector
    assert moved.memory.keywords.search("li", tokenize("Quokkabelle"), 5)
    moved.chat("li", "它几岁了？", dialogue_id="d2", at=T0 + timedelta(days=3))
    assert "推荐一本书" in str(model.prompts[-1])  # d2's window came along

    busy = subprocess.run([*CLI, "migrate", "--to", postgres_url], env=env, capture_output=True, text=True, timeout=300)
    assert busy.returncode == 1 and "占用" in busy.stdout + busy.stderr  # the home is open: refused before any copy
    moved.close()
    again = subprocess.run([*CLI, "migrate", "--to", postgres_url], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1 and "already holds data" in again.stdout + again.stderr
