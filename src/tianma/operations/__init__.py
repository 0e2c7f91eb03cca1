"""What the CLI asks of a data home, by name: run here over a home opened directly, or inside the
running ``tianma serve`` that holds it (its admin API), with the same result either way."""

from __future__ import annotations

from typing import Any

from tianma.operations import chat, importing, learning, memory
from tianma.operations.operation import Home, Operation, operation

__all__ = ["OPERATIONS", "Home", "Operation", "operation"]

OPERATIONS: dict[str, Operation[..., Any]] = {
    op.name: op
    for op in (
        memory.list_memories, memory.find_record, memory.forget, memory.forget_dialogue, memory.history,
        memory.list_reviews, memory.decide_review, memory.rollback, memory.strategy_conflicts, memory.count_index,
        memory.pending_vector_writes, memory.repair_index,
        learning.reflect, learning.undo_reflection, learning.maintain, learning.list_jobs,
        learning.run_job, learning.run_due, chat.chat, chat.feedback, chat.end_dialogue,
        importing.store, importing.summarise, importing.windows, importing.reflect,
    )
}  # fmt: skip
"""Every operation the admin API runs, by name."""
