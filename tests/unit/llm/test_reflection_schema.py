"""The reflection answer's schema: the four lists required, superseded statements optional."""

from __future__ import annotations

import json

from tianma.llm.reflection_schema import ReflectionResult
from tianma.llm.structured import parse_structured

FOUR = {"new_facts": [], "revised_preferences": [], "new_strategies": [], "deprecated_memories": []}


def test_an_answer_without_superseded_statements_still_parses() -> None:
    result = parse_structured(json.dumps(FOUR), ReflectionResult)
    assert result is not None and result.superseded_statements == []


def test_superseded_statements_are_in_the_schema_but_not_required() -> None:
    schema = ReflectionResult.model_json_schema()
    assert "superseded_statements" in schema["properties"]
    assert set(schema["required"]) == set(FOUR)


def test_a_superseded_statement_needs_both_ids_and_nothing_else() -> None:
    good = {**FOUR, "superseded_statements": [{"statement_id": "a", "by_event_id": "b"}]}
    result = parse_structured(json.dumps(good), ReflectionResult)
    assert result is not None and result.superseded_statements[0].by_event_id == "b"
    for bad in ({"statement_id": "a"}, {"statement_id": "a", "by_event_id": "b", "why": "x"}):
        assert parse_structured(json.dumps({**FOUR, "superseded_statements": [bad]}), ReflectionResult) is None
