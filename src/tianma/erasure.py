"""Forget, beyond the SQL store: the windows, the spans, the chat history, the logs.

:meth:`tianma.runtime.Runtime.forget` deletes records and the copies of their text in SQL in one
transaction (:mod:`tianma.storage.erase`) and takes them out of the indexes; then
:func:`erase_elsewhere` removes what other files hold of them: the checkpointed windows (a
forgotten dialogue's or user's are deleted, other windows lose the messages that quote a
forgotten text), the local span store, ``tianma chat``'s history, and finally the SQLite
write-ahead logs, which hold older copies of the pages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from tianma.chat_history import forget_history
from tianma.graph.checkpoints import WindowSaver
from tianma.settings import Settings
from tianma.storage.sql_store import SqlMemoryStore
from tianma.telemetry.span_erase import erase_spans
from tianma.text.tokenize import tokenize

if TYPE_CHECKING:
    from tianma.graph.checkpoints_postgres import PostgresWindowSaver


@dataclass(frozen=True)
class Forgotten:
    """What one forget deleted in SQL: whose, which records, which dialogues, which texts."""

    user_id: str
    record_ids: tuple[str, ...]
    dialogue_ids: tuple[str, ...] = ()
    """Dialogues forgotten whole: their windows go."""
    texts: tuple[str, ...] = ()
    """Texts of the forgotten records: windows, spans and history lose what quotes them."""
    whole_user: bool = False


def thread_id(user_id: str, dialogue_id: str) -> str:
    """The checkpoint thread of one dialogue."""
    return f"{user_id}\x1f{dialogue_id}"


def erase_elsewhere(
    forgotten: Forgotten,
    *,
    settings: Settings,
    store: SqlMemoryStore,
    saver: WindowSaver | PostgresWindowSaver,
    graph: CompiledStateGraph[Any, Any, Any, Any],
    dialogue_lock: Callable[[str], threading.Lock],
) -> None:
    """Remove from every file but the SQL store what ``forgotten`` deleted there.

    Call it without the memory lock: a window is changed under its dialogue's lock, which a
    turn of that dialogue holds while the model answers.
    """
    f = forgotten
    for dialogue_id in f.dialogue_ids:
        thread = thread_id(f.user_id, dialogue_id)
        with dialogue_lock(thread):
            saver.delete_thread(thread)
    if f.texts:
        for thread in saver.threads_quoting(thread_id(f.user_id, ""), list(f.texts)):
            with dialogue_lock(thread):
                config: RunnableConfig = {"configurable": {"thread_id": thread}}
                update = window_update(graph.get_state(config).values, f.texts)
                if update:
                    graph.update_state(config, update, as_node="capture_signals")
    erase_spans(
        settings.spans_target,
        user_id=f.user_id if f.whole_user else None,
        dialogue_ids=f.dialogue_ids,
        event_ids=f.record_ids,
        texts=f.texts,
    )
    if f.whole_user:
        forget_history(settings.home, f.user_id)
    else:
        for text in f.texts:
            forget_history(settings.home, f.user_id, text)
    tokenize.cache_clear()  # tokens of recent texts are kept in memory
    saver.forget_cache()
    saver.compact()
    store.compact()


def window_update(values: dict[str, Any], texts: Sequence[str]) -> dict[str, Any] | None:
    """The state update that takes out of a window the messages quoting one of ``texts`` and
    blanks the summary fields that do; None when nothing does."""
    quoted = [
        m.id
        for m in values.get("messages", [])
        if m.id and isinstance(m.content, str) and any(t in m.content for t in texts)
    ]
    summary = values.get("summary") or {}
    cleaned = {k: "" if isinstance(v, str) and any(t in v for t in texts) else v for k, v in summary.items()}
    update: dict[str, Any] = {}
    if quoted:
        update["messages"] = [RemoveMessage(id=i) for i in quoted]
    if cleaned != summary:
        update["summary"] = cleaned
    return update or None
