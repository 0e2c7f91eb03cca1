from __future__ import annotations

from tianma.serve.dialogues import DialogueTracker, client_conversation


def test_a_history_continues_the_dialogue_that_produced_it() -> None:
    tracker = DialogueTracker()
    first = tracker.resolve("u", [], None)
    assert first != tracker.resolve("u", [], None)  # a fresh conversation each time
    history = [{"role": "system", "content": "x"}, {"role": "user", "content": "你好"},
               {"role": "assistant", "content": "你好呀  "}]  # fmt: skip
    tracker.remember("u", history, first)
    same = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好呀"}]  # no system, spaces
    assert tracker.resolve("u", same, None) == first
    assert tracker.resolve("someone-else", same, None) != first


def test_an_unknown_history_falls_back_to_its_first_exchange() -> None:
    tracker = DialogueTracker()
    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    longer = [*history, {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]
    assert tracker.resolve("u", history, None) == tracker.resolve("u", longer, None)
    assert DialogueTracker().resolve("u", longer, None) == tracker.resolve("u", longer, None)  # after a restart


def test_a_client_conversation_id_is_namespaced_by_user() -> None:
    tracker = DialogueTracker()
    assert tracker.resolve("alice", [], "1") == tracker.resolve("alice", [{"role": "user", "content": "x"}], "1")
    assert tracker.resolve("alice", [], "1") != tracker.resolve("bob", [], "1")


def test_the_capacity_is_bounded() -> None:
    tracker = DialogueTracker(capacity=2)
    for i in range(3):
        tracker.remember("u", [{"role": "user", "content": str(i)}], f"d{i}")
    assert tracker.resolve("u", [{"role": "user", "content": "2"}], None) == "d2"
    assert tracker.resolve("u", [{"role": "user", "content": "0"}], None) != "d0"


def test_client_conversation_sources() -> None:
    assert client_conversation({}, {"x-conversation-id": "h"}) == "h"
    assert client_conversation({"chat_id": 7}, {}) == "7"
    assert client_conversation({"metadata": {"conversation_id": "m"}}, {}) == "m"
    assert client_conversation({"metadata": "junk", "session_id": " "}, {}) is None
