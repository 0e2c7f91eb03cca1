"""The product path on PostgreSQL: the real Open WebUI in headless Chromium → ``tianma serve``
with its records, dialogue windows and job table in a throwaway PostgreSQL → the Ollama stand-in.
A user tells it about an allergy in one chat and asks for dinner in another: the memory crosses
over, and nothing of it is kept in a SQLite file of the home."""

from __future__ import annotations

from sqlalchemy import text

from tests.browser.openwebui import OpenWebUI, wait_for
from tests.browser.test_openwebui import ALLERGY, DINNER, MODEL
from tests.contract.conftest import postgres_cluster  # noqa: F401  (the owui fixture asks for it)

TIANMA_ON_POSTGRES = True


def test_a_memory_told_in_one_chat_is_used_in_the_next_with_everything_in_postgresql(owui: OpenWebUI) -> None:
    engine = owui.runtime.store.engine
    assert engine.dialect.name == "postgresql"
    owui.script.replies[ALLERGY] = ["好的，我记住了：你对花生过敏。"]
    owui.script.replies[DINNER] = ["推荐番茄炒蛋：不含花生。"]
    owui.sign_up("小林", "xiaolin@example.com", "tianma-test-password")
    owui.new_chat(MODEL)
    owui.send(ALLERGY)
    owui.expect_reply("好的，我记住了")
    wait_for(lambda: len(owui.events()) == 1, what="the first chat's event")
    owui.new_chat(MODEL)
    owui.send(DINNER)
    owui.expect_reply("推荐番茄炒蛋")
    wait_for(lambda: len(owui.events()) == 2, what="the second chat's event")
    owui.shot("postgres-dinner")
    (body,) = owui.turn_bodies(DINNER)
    assert ALLERGY in body["messages"][0]["content"]  # the memory, found in PostgreSQL and injected
    with engine.connect() as conn:
        stored = set(conn.execute(text("SELECT content FROM records WHERE kind = 'event'")).scalars())
        windows = conn.execute(text("SELECT count(DISTINCT thread_id) FROM checkpoints")).scalar_one()
    assert stored == {ALLERGY, DINNER} and windows == 2  # each chat's window in LangGraph's PostgreSQL saver
    home = owui.runtime.settings.home
    assert not (home / "tianma.db").exists() and not (home / "checkpoints.db").exists()
