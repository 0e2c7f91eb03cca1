"""parse_structured over a corpus of broken small-model answers; call_structured with real fakes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_ollama import ChatOllama
from pydantic import BaseModel, ConfigDict, JsonValue

from tianma.llm.ollama import close_chat_model, http_options
from tianma.llm.scripted import ScriptedChatModel
from tianma.llm.structured import call_structured, extract_json_text, parse_structured
from tianma.testing.ollama_standin import OllamaStandin

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "broken_json"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewFact(_Closed):
    key: str
    content: str
    source_event_ids: list[str]


class RevisedPreference(_Closed):
    content: str
    replaces: str | None
    source_event_ids: list[str]


class NewStrategy(_Closed):
    trigger: dict[str, JsonValue]
    action: str
    source_event_ids: list[str]


class DeprecatedMemory(_Closed):
    memory_id: str
    reason: str
    source_event_ids: list[str]


class ReflectionOutput(_Closed):
    """What the reflection step asks the model for: all four keys required, nothing else."""

    new_facts: list[NewFact]
    revised_preferences: list[RevisedPreference]
    new_strategies: list[NewStrategy]
    deprecated_memories: list[DeprecatedMemory]


Outcome = Literal["repaired", "dropped"]

OUTCOMES: dict[str, Outcome] = {
    "01-clean-control": "repaired",
    "02-fence-with-language": "repaired",
    "03-fence-without-language": "repaired",
    "04-prose-before": "repaired",
    "05-prose-after": "repaired",
    "06-think-block": "repaired",
    "07-think-close-only": "repaired",
    "08-bom": "repaired",
    "09-trailing-commas": "repaired",
    "10-python-literals": "repaired",
    "11-unquoted-keys": "repaired",
    "12-comments": "repaired",
    "13-raw-newlines-in-string": "repaired",
    "14-missing-comma-in-array": "repaired",
    "15-chinese-quotes-inside-strings": "repaired",
    "16-truncated-mid-string": "dropped",
    "17-truncated-mid-array": "dropped",
    "18-truncated-after-key": "dropped",
    "19-think-never-closed": "dropped",
    "20-two-objects-concatenated": "dropped",
    "21-draft-then-correction": "dropped",
    "22-top-level-list": "dropped",
    "23-missing-required-key": "dropped",
    "24-extra-key": "dropped",
    "25-ids-as-string": "dropped",
    "26-smart-quote-delimiters": "dropped",
    "27-fullwidth-separators": "dropped",
    "28-nan": "dropped",
    "29-empty-answer": "dropped",
    "30-refusal": "dropped",
    "31-stringified-nested-json": "dropped",
    "32-duplicate-keys": "dropped",
    "33-partial-then-cannot-continue": "dropped",
    "34-stray-backslash-before-quote": "dropped",
    "35-unquoted-chinese-value": "dropped",
    "36-object-instead-of-list": "dropped",
    "37-ellipsis-placeholder": "dropped",
    "38-schema-echo": "dropped",
    "39-yaml-instead-of-json": "dropped",
    "40-mismatched-brackets": "dropped",
    "41-null-instead-of-list": "dropped",
    "42-ids-as-numbers": "dropped",
    "43-invalid-escape": "dropped",
    "44-trailing-comma-then-truncated": "dropped",
    "45-repetition-loop": "dropped",
    "46-deeply-nested": "dropped",
}

VALID = json.dumps(
    {
        "new_facts": [{"key": "drink", "content": "用户喜欢绿茶", "source_event_ids": ["evt_1"]}],
        "revised_preferences": [],
        "new_strategies": [],
        "deprecated_memories": [],
    },
    ensure_ascii=False,
)
TRUNCATED = '{"new_facts": [{"key": "drink", "content": "用户喜欢'


def _case(name: str) -> str:
    return (CORPUS / f"{name}.txt").read_text(encoding="utf-8")


def test_every_corpus_file_has_a_declared_outcome() -> None:
    assert {p.stem for p in CORPUS.glob("*.txt")} == set(OUTCOMES)
    expected = {p.name.removesuffix(".expected.json") for p in CORPUS.glob("*.expected.json")}
    assert expected == {name for name, outcome in OUTCOMES.items() if outcome == "repaired"}
    assert len(OUTCOMES) >= 30
    assert list(OUTCOMES.values()).count("dropped") >= 20


@pytest.mark.parametrize(("name", "outcome"), OUTCOMES.items(), ids=list(OUTCOMES))
def test_corpus_case_is_repaired_exactly_or_dropped(name: str, outcome: Outcome) -> None:
    value = parse_structured(_case(name), ReflectionOutput)
    if outcome == "dropped":
        assert value is None
    else:
        assert value is not None
        expected = json.loads((CORPUS / f"{name}.expected.json").read_text(encoding="utf-8"))
        assert value.model_dump(mode="json") == expected


@pytest.mark.parametrize(
    ("text", "candidate"),
    [
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('<think>先想想 {x}</think>\n好的：{"a": "}"} 完成。', '{"a": "}"}'),
        ("\ufeff  {'a': [1, 2,],}  ", "{'a': [1, 2,],}"),
        ('{"a": 1} // 注释里的 { 不算', None),
        ('{"a": 1}\n{"a": 2}', None),
        ('[{"a": 1}]', None),
        ('{"a": "b', None),
        ("<think>还没想完", None),
        ("", None),
    ],
)
def test_extract_json_text(text: str, candidate: str | None) -> None:
    assert extract_json_text(text) == candidate


def test_parse_structured_does_not_coerce_types() -> None:
    class Count(_Closed):
        n: int
        label: str

    assert parse_structured('{"n": 3, "label": "三"}', Count) == Count(n=3, label="三")
    assert parse_structured('{"n": "3", "label": "三"}', Count) is None
    assert parse_structured('{"n": 3, "label": 3}', Count) is None


def _prompt() -> list[BaseMessage]:
    return [
        SystemMessage("Reflect on the events. Answer with JSON only."),
        HumanMessage("事件：evt_1 用户说喜欢绿茶"),
    ]


def test_a_valid_first_answer_takes_one_attempt() -> None:
    model = ScriptedChatModel(replies=[VALID])
    result = call_structured(model, _prompt(), ReflectionOutput)
    assert result.value is not None
    assert result.value.new_facts[0].content == "用户喜欢绿茶"
    assert (result.attempts, result.raw, result.error) == (1, (VALID,), None)
    assert len(model.prompts) == 1


def test_a_broken_answer_is_retried_with_a_json_only_message() -> None:
    model = ScriptedChatModel(replies=[TRUNCATED, f"```json\n{VALID}\n```"])
    result = call_structured(model, _prompt(), ReflectionOutput)
    assert result.value is not None
    assert (result.attempts, result.error) == (2, None)
    assert result.raw == (TRUNCATED, f"```json\n{VALID}\n```")
    retry = model.prompts[1]
    assert retry[:2] == _prompt()
    assert isinstance(retry[2], AIMessage) and retry[2].content == TRUNCATED
    assert isinstance(retry[3], HumanMessage)
    assert "invalid (truncated, unbalanced or too deeply nested JSON)" in str(retry[3].content)
    assert "only the JSON object" in str(retry[3].content)


def test_two_broken_answers_are_dropped_whole() -> None:
    model = ScriptedChatModel(replies=[TRUNCATED, VALID.replace('"deprecated_memories": []', '"extra": 1')])
    result = call_structured(model, _prompt(), ReflectionOutput)
    assert result.value is None
    assert result.attempts == 2
    assert len(result.raw) == 2
    assert result.error is not None and result.error.startswith("schema: ")


def test_retries_zero_makes_one_call() -> None:
    model = ScriptedChatModel(replies=[TRUNCATED, VALID])
    result = call_structured(model, _prompt(), ReflectionOutput, retries=0)
    assert (result.value, result.attempts, result.error) == (
        None,
        1,
        "truncated, unbalanced or too deeply nested JSON",
    )


def test_a_model_failure_is_returned_not_raised() -> None:
    model = ScriptedChatModel(replies=[ConnectionError("connection refused")])
    result = call_structured(model, _prompt(), ReflectionOutput, base_url="http://127.0.0.1:11434")
    assert (result.value, result.attempts, result.raw) == (None, 1, ())
    assert result.error is not None and "not reachable at http://127.0.0.1:11434" in result.error
    assert len(model.prompts) == 1  # an unreachable daemon is not retried


def test_a_model_failure_on_the_retry_keeps_the_first_answer() -> None:
    model = ScriptedChatModel(replies=["抱歉，我做不到。", ConnectionError("reset by peer")])
    result = call_structured(model, _prompt(), ReflectionOutput)
    assert (result.value, result.attempts, result.raw) == (None, 2, ("抱歉，我做不到。",))
    assert result.error is not None and "not reachable" in result.error


def test_token_counts_are_summed_over_attempts() -> None:
    model = ScriptedChatModel(replies=[TRUNCATED, VALID])
    result = call_structured(model, _prompt(), ReflectionOutput)
    # ScriptedChatModel counts half a token per character of prompt and of answer
    sent = [sum(len(str(m.content)) for m in prompt) // 2 for prompt in model.prompts]
    assert result.input_tokens == sum(sent) > 0
    assert result.output_tokens == len(TRUNCATED) // 2 + len(VALID) // 2


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[OllamaStandin]:
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    with OllamaStandin(models=["qwen2.5:7b"], reply=lambda messages: VALID) as running:
        yield running
    assert running.errors == []


@contextmanager
def _ollama(standin: OllamaStandin, **fields: Any) -> Iterator[ChatOllama]:
    options = http_options(standin.base_url, 5)
    model = ChatOllama(model="qwen2.5:7b", base_url=standin.base_url, client_kwargs=options, **fields)
    try:
        yield model
    finally:
        close_chat_model(model)  # the schema-bound copy shares this HTTP client


def test_chat_ollama_gets_the_json_schema_as_format(standin: OllamaStandin) -> None:
    with _ollama(standin, temperature=0.2) as model:
        result = call_structured(model, _prompt(), ReflectionOutput)
    assert result.value is not None and result.input_tokens > 0
    body = standin.requests_to("/api/chat")[-1].body
    assert body is not None
    assert body["format"] == ReflectionOutput.model_json_schema()
    assert body["options"]["temperature"] == 0.2
    assert model.format is None  # the caller's model is left as it was


def test_a_format_the_caller_set_is_kept(standin: OllamaStandin) -> None:
    with _ollama(standin, format="json") as model:
        result = call_structured(model, _prompt(), ReflectionOutput)
    assert result.value is not None
    body = standin.requests_to("/api/chat")[-1].body
    assert body is not None and body["format"] == "json"
