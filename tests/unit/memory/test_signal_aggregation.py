"""Feedback aggregation: weak signals of one dialogue merge once, then every signal is archived."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tianma import Runtime
from tianma.memory.feedback import apply_signal
from tianma.memory.signal_aggregation import ARCHIVED_AT, aggregate_signals, is_archived, pending_signals
from tianma.policies.credit import LEARNING_RATE, MERGED_NEGATIVE, MERGED_POSITIVE
from tianma.storage.records import MemoryRecord, NewEvent, Provenance

T0 = datetime(2026, 6, 1, 9, tzinfo=UTC)
RUN = T0 + timedelta(hours=6)


@pytest.fixture
def rt(make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder) -> Runtime:
    return make_runtime(embedder=char_embedder)


def add_fact(rt: Runtime, user: str = "u") -> str:
    record = rt.memory.store.add_record(user, "fact", "用户早上喝黑咖啡", Provenance(source="test"),
                                        key="drink.morning", confidence=0.6, at=T0)  # fmt: skip
    return record.id


def turn(rt: Runtime, dialogue: str, minute: int, injected: str | None = None, user: str = "u") -> str:
    """A user message; ``injected`` is a record the turn put in the prompt (signals credit it)."""
    (event,) = rt.memory.record_events(
        [NewEvent(user_id=user, role="user", text=f"问题 {minute}", at=T0 + timedelta(minutes=minute),
                  dialogue_id=dialogue)]
    )  # fmt: skip
    if injected is not None:
        rt.memory.store.add_injections(
            event.id, user, [{"record_id": injected, "role": "memory", "rank": 0, "score": 1.0}]
        )
    return event.id


def signal(
    rt: Runtime, kind: str, confidence: float, target: str, dialogue: str, minute: int, user: str = "u"
) -> MemoryRecord:
    """A signal stored but not applied (as if no turn had merged it)."""
    return rt.memory.add_signal(user, kind, confidence, target_event_id=target, source_event_id=None,
                                dialogue_id=dialogue, at=T0 + timedelta(minutes=minute), detail=kind)  # fmt: skip


def signals(rt: Runtime, user: str = "u") -> dict[str, MemoryRecord]:
    return {s.id: s for s in rt.memory.store.list_records(user, "signal")}


def confidence(rt: Runtime, record_id: str) -> float:
    return rt.memory.store.get(record_id).confidence


def test_two_weak_negatives_in_one_dialogue_merge_into_one_credited_signal(rt: Runtime) -> None:
    fact = add_fact(rt)
    first, second = turn(rt, "d", 0, fact), turn(rt, "d", 1, fact)
    a = signal(rt, "impatience", 0.4, first, "d", 1)
    b = signal(rt, "silence", 0.3, second, "d", 2)

    report = aggregate_signals(rt.memory, "u", RUN)

    (merged_id,) = report["merged"]
    assert report["seen"] == 2 and report["weak"] == 2 and report["archived"] == 3
    assert report["weak_by_type"] == {"impatience": 1, "silence": 1}
    merged = rt.memory.store.get(merged_id)
    assert merged.kind == "signal" and merged.confidence == MERGED_NEGATIVE
    assert merged.data["type"] == "merged_negative" and merged.data["merged"] == [a.id, b.id]
    assert merged.dialogue_id == "d" and merged.provenance.dialogue_ids == ("d",)
    assert set(merged.provenance.event_ids) == {first, second}
    assert "aggregated" in merged.data["detail"] and merged.data["aggregated_at"] == RUN.isoformat()
    # applied like a strong signal: the fact both turns injected loses confidence once
    expected = round(0.6 - LEARNING_RATE * MERGED_NEGATIVE, 6)
    assert confidence(rt, fact) == expected and report["credited"] == {fact: expected}
    stored = signals(rt)
    assert stored[a.id].data["merged_into"] == merged_id == stored[b.id].data["merged_into"]
    assert all(s.data[ARCHIVED_AT] == RUN.isoformat() for s in stored.values())


def test_two_weak_positives_merge_at_the_positive_confidence(rt: Runtime) -> None:
    fact = add_fact(rt)
    target = turn(rt, "d", 0, fact)
    signal(rt, "praise", 0.3, target, "d", 1)
    signal(rt, "praise", 0.3, target, "d", 2)
    (merged_id,) = aggregate_signals(rt.memory, "u", RUN)["merged"]
    assert rt.memory.store.get(merged_id).confidence == MERGED_POSITIVE
    assert confidence(rt, fact) == round(0.6 + LEARNING_RATE * MERGED_POSITIVE, 6)


def test_one_weak_signal_alone_is_only_counted_and_archived(rt: Runtime) -> None:
    fact = add_fact(rt)
    lone = signal(rt, "impatience", 0.4, turn(rt, "d", 0, fact), "d", 1)
    report = aggregate_signals(rt.memory, "u", RUN)
    assert report["merged"] == [] and report["seen"] == 1 and report["archived"] == 1
    assert confidence(rt, fact) == 0.6 and list(signals(rt)) == [lone.id]
    assert is_archived(rt.memory.store.get(lone.id))
    assert "merged_into" not in rt.memory.store.get(lone.id).data


def test_weak_signals_of_different_dialogues_do_not_merge(rt: Runtime) -> None:
    fact = add_fact(rt)
    signal(rt, "impatience", 0.4, turn(rt, "d1", 0, fact), "d1", 1)
    signal(rt, "impatience", 0.4, turn(rt, "d2", 5, fact), "d2", 6)
    report = aggregate_signals(rt.memory, "u", RUN)
    assert report["merged"] == [] and report["archived"] == 2 and len(signals(rt)) == 2
    assert confidence(rt, fact) == 0.6


def test_strong_signals_are_archived_but_neither_merged_nor_applied_again(rt: Runtime) -> None:
    fact = add_fact(rt)
    target = turn(rt, "d", 0, fact)
    for minute in (1, 2):  # explicit feedback, applied when given (as Runtime.feedback does)
        apply_signal(rt.memory, signal(rt, "dislike", 0.9, target, "d", minute), T0)
    signal(rt, "impatience", 0.4, target, "d", 3)  # one weak one beside them: still alone
    after_feedback = confidence(rt, fact)
    assert after_feedback < 0.6

    report = aggregate_signals(rt.memory, "u", RUN)
    assert report["merged"] == [] and report["seen"] == 3 and report["weak"] == 1
    assert report["archived"] == 3 and confidence(rt, fact) == after_feedback


def test_signals_merged_in_the_turn_are_archived_not_merged_again(rt: Runtime) -> None:
    fact = add_fact(rt)
    target = turn(rt, "d", 0, fact)
    for minute in (1, 2):  # what capture_signals does for each implicit signal
        apply_signal(rt.memory, signal(rt, "impatience", 0.4, target, "d", minute), T0)
    before = {s.id: s for s in signals(rt).values()}
    assert len(before) == 3
    moved = confidence(rt, fact)

    report = aggregate_signals(rt.memory, "u", RUN)
    assert report["merged"] == [] and report["seen"] == 3 and report["archived"] == 3
    assert set(signals(rt)) == set(before) and confidence(rt, fact) == moved


def test_a_second_run_over_the_same_data_creates_and_changes_nothing(rt: Runtime) -> None:
    fact = add_fact(rt)
    target = turn(rt, "d", 0, fact)
    signal(rt, "impatience", 0.4, target, "d", 1)
    signal(rt, "silence", 0.3, target, "d", 2)
    assert len(aggregate_signals(rt.memory, "u", RUN)["merged"]) == 1
    state = signals(rt)
    moved = confidence(rt, fact)

    again = aggregate_signals(rt.memory, "u", RUN + timedelta(hours=6))
    assert again == {"user_id": "u", "seen": 0, "weak": 0, "weak_by_type": {}, "merged": [], "credited": {},
                     "archived": 0}  # fmt: skip
    assert signals(rt) == state and confidence(rt, fact) == moved


def test_a_lone_archived_weak_signal_still_merges_with_a_later_one_of_its_dialogue(rt: Runtime) -> None:
    fact = add_fact(rt)
    target = turn(rt, "d", 0, fact)
    early = signal(rt, "impatience", 0.4, target, "d", 1)
    assert aggregate_signals(rt.memory, "u", RUN)["merged"] == []
    late = signal(rt, "silence", 0.3, target, "d", 7 * 60)  # the dialogue goes on after the run

    report = aggregate_signals(rt.memory, "u", RUN + timedelta(hours=6))
    (merged_id,) = report["merged"]
    assert report["seen"] == 1 and report["archived"] == 2  # the early one is not counted again
    assert rt.memory.store.get(merged_id).data["merged"] == [early.id, late.id]


def test_only_signals_up_to_the_run_time_and_of_that_user_are_taken(rt: Runtime) -> None:
    signal(rt, "impatience", 0.4, turn(rt, "d", 0), "d", 1)
    later = signal(rt, "impatience", 0.4, turn(rt, "e", 9 * 60), "e", 10 * 60)  # after RUN
    other = signal(rt, "impatience", 0.4, turn(rt, "x", 0, user="v"), "x", 1, user="v")
    report = aggregate_signals(rt.memory, "u", RUN)
    assert report["seen"] == 1 and report["merged"] == []
    assert [s.id for s in pending_signals(rt.memory, "u", RUN + timedelta(days=1))] == [later.id]
    assert not is_archived(rt.memory.store.get(other.id))


def test_the_runtime_aggregates_every_user_with_pending_signals(rt: Runtime) -> None:
    for user in ("u", "v"):
        target = turn(rt, "d-" + user, 0, user=user)
        signal(rt, "impatience", 0.4, target, "d-" + user, 1, user=user)
        signal(rt, "impatience", 0.4, target, "d-" + user, 2, user=user)
    reports = rt.aggregate_signals(RUN)
    assert [(r.user_id, len(r.merged), r.archived) for r in reports] == [("u", 1, 3), ("v", 1, 3)]
    assert rt.aggregate_signals(RUN) == []
