"""An operation's codec: arguments and results through JSON, errors by their class."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import pytest

from tianma.errors import (
    ChatModelUnavailableError,
    InvalidInputError,
    PluginNotFoundError,
    RecordNotFoundError,
    TianmaError,
)
from tianma.guardrails.regression import ScenarioError
from tianma.operations import OPERATIONS
from tianma.operations.operation import Home, decode_error, encode_error, operation
from tianma.storage.records import MemoryRecord, Provenance
from tianma.turn import RedlineVerdict, Turn, TurnSignal

T0 = datetime(2026, 2, 1, 8, 30, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Found:
    record: MemoryRecord
    tags: tuple[str, ...]


@operation("test.find")
def find(
    home: Home, user_id: str, kind: Literal["fact", "event"] | None = None, limit: int = 5
) -> list[Found]:
    record = MemoryRecord("r1", user_id, kind or "fact", "喜欢爵士乐", T0, T0, Provenance(("e1",)),
                          data={"zone": "free", "n": [1, 2.5, None]})  # fmt: skip
    return [Found(record, ("a",) * limit)]


def test_arguments_go_by_name_with_defaults_and_come_back_validated() -> None:
    sent = find.encode_args("me", limit=2)
    assert sent == {"user_id": "me", "kind": None, "limit": 2}
    assert find.decode_args(json.loads(json.dumps(sent))) == sent
    assert find.decode_args({"user_id": "me"}) == {"user_id": "me"}  # the rest take their defaults
    assert find.decode_args({"user_id": "me", "limit": "3"})["limit"] == 3


@pytest.mark.parametrize(("payload", "message"), [
    ([], "test.find: arguments must be a JSON object"),
    ({}, "test.find: missing argument user_id"),
    ({"user_id": "me", "home": "x"}, "test.find: unknown argument(s) home"),
    ({"user_id": "me", "kind": "gossip"}, "test.find: bad argument kind"),
])  # fmt: skip
def test_bad_arguments_are_invalid_input(payload: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        find.decode_args(payload)


def test_a_result_survives_json_unchanged() -> None:
    result = find(None, "me", "event", 1)  # type: ignore[arg-type]
    wire = json.loads(json.dumps(find.encode_result(result)))
    assert wire[0]["record"]["created_at"] == "2026-02-01T08:30:00Z"
    back = find.decode_result(wire)
    assert back == result and isinstance(back[0].record, MemoryRecord)
    assert back[0].record.created_at.utcoffset() is not None


def test_a_turn_with_its_redline_verdict_and_signals_survives_json() -> None:
    turn = Turn(reply="好", event_id="e2", dialogue_id="d", trace_id="t",
                redline=RedlineVerdict("amended", ("r1",), ("提示",)), signals=(TurnSignal("correction", "e1", 0.8),))  # fmt: skip
    chat = OPERATIONS["chat.turn"]
    assert chat.decode_result(json.loads(json.dumps(chat.encode_result(turn)))) == turn
    bare = Turn(reply="", event_id="e3", dialogue_id="d", trace_id="t")  # failed before the redline check
    assert chat.decode_result(json.loads(json.dumps(chat.encode_result(bare)))).redline is None


def test_every_registered_operation_has_a_codec_for_its_annotations() -> None:
    assert len(OPERATIONS) >= 18 and all(name == op.name for name, op in OPERATIONS.items())
    for op in OPERATIONS.values():  # every annotation resolves at run time (none only under TYPE_CHECKING)
        assert set(op._adapters) == {*op._params, "return"}, op.name


@pytest.mark.parametrize("exc", [
    RecordNotFoundError("no record 'abc' for user me"),
    InvalidInputError("review r1 is already approved"),
    ChatModelUnavailableError("ollama pull x", event_id="e1"),
])  # fmt: skip
def test_an_error_comes_back_as_its_class_and_message(exc: TianmaError) -> None:
    back = decode_error(json.loads(json.dumps(encode_error(exc))))
    assert type(back) is type(exc) and str(back) == str(exc)
    assert getattr(back, "event_id", None) == getattr(exc, "event_id", None)


def test_an_error_outside_the_tree_or_with_other_arguments_comes_back_as_its_nearest() -> None:
    assert encode_error(ScenarioError("bad file"))["type"] == "ConfigError"
    plugin = decode_error(encode_error(PluginNotFoundError("tianma.nodes", "x", [])))
    assert type(plugin) is TianmaError and "no tianma.nodes plugin named 'x'" in str(plugin)
    assert type(decode_error({"type": "OSError", "message": "m"})) is TianmaError
    assert "server answered" in str(decode_error("missing or wrong admin token"))
