"""Operations of ``tianma memory``, ``review``, ``strategies`` and ``doctor``'s index check.

The reads use the SQL store only; what changes records (forget, approve, reject, roll back)
goes through the runtime, which keeps the indexes in step and serialises writes.
"""

from __future__ import annotations

from tianma.errors import InvalidInputError, RecordNotFoundError
from tianma.memory import reviews
from tianma.memory.index_check import IndexDiff, Repair
from tianma.memory.reflection_store import record_history
from tianma.operations.operation import Home, operation
from tianma.policies.conflicts import Conflict, find_conflicts
from tianma.results import Decision, Review, Rollback, Version
from tianma.storage.records import Kind, MemoryRecord, Status


@operation("memory.list")
def list_memories(
    home: Home, user_id: str, kind: Kind | None = None, status: Status | None = None
) -> list[MemoryRecord]:
    """Everything remembered about a user, optionally of one kind and status (``Runtime.memories``)."""
    return home.store.list_records(user_id, kind, status)


@operation("memory.find")
def find_record(home: Home, user_id: str, prefix: str) -> MemoryRecord:
    """A user's record by full id or unique id prefix.

    Raises:
        RecordNotFoundError: none matches.
        InvalidInputError: several match.
    """
    found = [r for r in home.store.list_records(user_id) if r.id.startswith(prefix)]
    if not found:
        raise RecordNotFoundError(f"no record {prefix!r} for user {user_id}")
    if len(found) > 1:
        raise InvalidInputError(f"{prefix!r} matches {len(found)} records; give more characters")
    return found[0]


@operation("memory.forget")
def forget(home: Home, user_id: str, record_id: str | None = None) -> int:
    """Really delete one record, or everything of a user (``Runtime.forget``); how many."""
    return home.runtime().forget(user_id, record_id)


@operation("memory.forget_dialogue")
def forget_dialogue(home: Home, user_id: str, dialogue_id: str) -> int:
    """Really delete one dialogue of a user (``Runtime.forget_dialogue``); how many records."""
    return home.runtime().forget_dialogue(user_id, dialogue_id)


@operation("memory.history")
def history(home: Home, record_id: str) -> list[Version]:
    """Every version of a record, oldest first (``Runtime.history``)."""
    return [Version.from_dict(v) for v in record_history(home.store, record_id)]


@operation("review.list")
def list_reviews(
    home: Home, user_id: str | None = None, status: str | None = "pending"
) -> list[Review]:
    """Reviews, oldest first, of one user or all, of one status or all (``Runtime.reviews``)."""
    return [Review.from_dict(r) for r in reviews.list_reviews(home.store, user_id, status)]


@operation("review.decide")
def decide_review(home: Home, prefix: str, reason: str, approve: bool) -> Decision:
    """Approve or reject the review with this id or unique id prefix (``Runtime.approve``/``reject``).

    Raises:
        RecordNotFoundError: none matches.
        InvalidInputError: several match, or it was already decided.
    """
    found = [r for r in reviews.list_reviews(home.store, None, None) if r["id"].startswith(prefix)]
    if not found:
        raise RecordNotFoundError(f"no review {prefix}")
    if len(found) > 1:
        raise InvalidInputError(f"{prefix} matches {len(found)} reviews; give more characters")
    rt = home.runtime()
    review_id = found[0]["id"]
    return rt.approve(review_id, reason) if approve else rt.reject(review_id, reason)


@operation("strategies.rollback")
def rollback(home: Home, record_id: str, version: int | None = None) -> Rollback:
    """Restore a record as it was at ``version`` (default the previous one), as a new version."""
    return home.runtime().rollback(record_id, version)


@operation("strategies.conflicts")
def strategy_conflicts(home: Home, user_id: str) -> list[Conflict]:
    """Active strategies that contradict each other at equal priority (``Runtime.strategy_conflicts``)."""
    return find_conflicts(home.store.list_records(user_id, "strategy", "active"))


@operation("doctor.index")
def count_index(home: Home) -> list[IndexDiff]:
    """Per user: the ids SQL says both indexes should hold against those they hold
    (``Runtime.check_index``)."""
    return home.runtime().check_index()


@operation("doctor.outbox")
def pending_vector_writes(home: Home) -> int:
    """Vector writes committed in SQL, not applied yet (``Runtime.check_index``'s companion)."""
    return home.runtime().pending_index_writes()


@operation("index.repair")
def repair_index(home: Home) -> Repair:
    """Fix only what the index check found (``Runtime.repair_index``)."""
    return home.runtime().repair_index()
