"""The regression gate: replay standard scenarios with and without a candidate strategy set."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from tianma.errors import ConfigError


class ScenarioError(ConfigError):
    """A scenario file is unreadable or invalid; the message names the file, scenario and field."""


@dataclass(frozen=True, slots=True)
class Expectation:
    """What must hold for a scenario; every check is a case-insensitive substring test."""

    prompt_contains: tuple[str, ...] = ()
    """Every string must occur in the system prompt."""
    prompt_not_contains: tuple[str, ...] = ()
    """No string may occur in the system prompt."""
    max_strategies: int | None = None
    """At most this many strategies may be applied."""
    reply_contains: tuple[str, ...] = ()
    """Every string must occur in the reply after the redline check."""
    reply_not_contains: tuple[str, ...] = ()
    """No string may occur in the reply after the redline check."""
    verdict: str | None = None
    """The expected redline verdict: ``pass``, ``amended`` or ``blocked``."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """User message(s) plus a checkable expectation about the prompt and/or the reply."""

    id: str
    description: str
    messages: tuple[str, ...]
    """The user's messages; the last one is the turn checked."""
    draft_reply: str | None
    """A canned reply passed through the redline check (None: no reply checks)."""
    hour: int | None
    """Local hour of the checked turn, for time-of-day triggers (None means 12)."""
    expect: Expectation


@dataclass(frozen=True, slots=True)
class Rendered:
    """What the runtime produced for a scenario's last message."""

    prompt: str
    """The full system prompt."""
    strategies: tuple[str, ...]
    """Contents of the strategies applied."""
    reply: str | None
    """The draft reply after the redline check."""
    verdict: str | None
    """The redline verdict."""


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """Whether one scenario held, and why not."""

    id: str
    passed: bool
    failures: tuple[str, ...]
    """Human-readable, e.g. ``prompt contains "用英文回答" (forbidden)``."""


@dataclass(frozen=True, slots=True)
class RegressionReport:
    """Baseline against candidate; the gate passes when the pass rate does not drop."""

    baseline: tuple[ScenarioResult, ...]
    candidate: tuple[ScenarioResult, ...]
    baseline_rate: float
    candidate_rate: float
    passed: bool
    """``candidate_rate >= baseline_rate``."""
    newly_failed: tuple[str, ...]
    """Ids passing in the baseline and failing with the candidate."""

    def summary(self) -> str:
        """One paragraph: both pass rates, then each newly failing scenario and why."""
        base, cand = _count(self.baseline), _count(self.candidate)
        head = "Regression gate passed" if self.passed else "Regression gate failed"
        text = (
            f"{head}: {cand}/{len(self.candidate)} scenarios pass with the candidate "
            f"({self.candidate_rate:.0%}) against {base}/{len(self.baseline)} "
            f"({self.baseline_rate:.0%}) with the current strategies."
        )
        if self.newly_failed:
            why = {r.id: "; ".join(r.failures) for r in self.candidate}
            text += " Newly failing: " + ", ".join(f"{i} ({why[i]})" for i in self.newly_failed) + "."
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole report, summary included."""
        data = asdict(self)
        data["summary"] = self.summary()
        return data


def _count(results: Sequence[ScenarioResult]) -> int:
    return sum(r.passed for r in results)


def _rate(results: Sequence[ScenarioResult]) -> float:
    return _count(results) / len(results) if results else 1.0


# ---- loading: pydantic at the file boundary, frozen dataclasses inside ----


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _one_line(value: str) -> str:
    if "\n" in _not_blank(value):
        raise ValueError("must be a single line")
    return value


_Text = Annotated[str, AfterValidator(_not_blank)]
_Line = Annotated[str, AfterValidator(_one_line)]


class _ExpectModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    prompt_contains: list[_Text] = []
    prompt_not_contains: list[_Text] = []
    max_strategies: int | None = Field(default=None, ge=0)
    reply_contains: list[_Text] = []
    reply_not_contains: list[_Text] = []
    verdict: Literal["pass", "amended", "blocked"] | None = None


class _ScenarioModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    id: _Line
    description: _Line
    messages: list[_Text] = Field(min_length=1)
    draft_reply: str | None = None
    hour: int | None = Field(default=None, ge=0, le=23)
    expect: _ExpectModel

    @model_validator(mode="after")
    def _coherent(self) -> _ScenarioModel:
        e = self.expect
        if not any(getattr(e, name) not in (None, []) for name in type(e).model_fields):
            raise ValueError("expect holds no check")
        if self.draft_reply is None and (e.reply_contains or e.reply_not_contains or e.verdict):
            raise ValueError("reply checks need a draft_reply")
        return self


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    version: Literal[1]
    scenarios: list[_ScenarioModel] = Field(min_length=1)


def _where(raw: Any, loc: tuple[int | str, ...]) -> str:
    """``scenarios[3] (id "x"): expect.foo`` from a pydantic error location."""
    if len(loc) >= 2 and loc[0] == "scenarios" and isinstance(loc[1], int):
        index, rest = loc[1], loc[2:]
        try:
            sid = f' (id "{raw["scenarios"][index]["id"]}")'
        except (KeyError, TypeError, IndexError):
            sid = ""
        return f"scenarios[{index}]{sid}" + (": " + ".".join(map(str, rest)) if rest else "")
    return ".".join(map(str, loc)) or "top level"


def _message(error: Any) -> str:
    if error["type"] != "extra_forbidden":
        return str(error["msg"]).removeprefix("Value error, ")
    loc = error["loc"]
    model = _FileModel if len(loc) < 3 else _ExpectModel if len(loc) > 3 else _ScenarioModel
    return f"unknown key (allowed: {', '.join(model.model_fields)})"


def _convert(m: _ScenarioModel) -> Scenario:
    checks: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in m.expect.model_dump().items()
    }
    return Scenario(m.id, m.description, tuple(m.messages), m.draft_reply, m.hour, Expectation(**checks))


def load_scenarios(path: Path | None = None) -> tuple[Scenario, ...]:
    """Load and strictly validate a scenario file.

    Args:
        path: The user's file; ``None`` loads the set shipped with tianma.

    Returns:
        The scenarios, in file order.

    Raises:
        ScenarioError: The file cannot be read, is not JSON, has an unknown key, a wrong
            type, an hour outside 0..23, empty messages or a duplicate id.
    """
    source: Traversable | Path = (
        files("tianma.guardrails") / "data" / "regression.json" if path is None else path.expanduser()
    )
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{source}: cannot read the scenario file: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{source}: invalid JSON: {exc}") from exc
    try:
        parsed = _FileModel.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{_where(raw, tuple(e['loc']))}: {_message(e)}" for e in exc.errors())
        raise ScenarioError(f"{source}: {problems}") from exc
    seen: dict[str, int] = {}
    for index, scenario in enumerate(parsed.scenarios):
        if scenario.id in seen:
            raise ScenarioError(
                f'{source}: scenarios[{index}]: id "{scenario.id}" duplicates scenarios[{seen[scenario.id]}]'
            )
        seen[scenario.id] = index
    return tuple(_convert(s) for s in parsed.scenarios)


# ---- checking ----


def _contains(where: str, text: str, wanted: Sequence[str], forbidden: Sequence[str]) -> list[str]:
    folded = text.casefold()
    failures = [f'{where} lacks "{s}"' for s in wanted if s.casefold() not in folded]
    failures += [f'{where} contains "{s}" (forbidden)' for s in forbidden if s.casefold() in folded]
    return failures


def check(scenario: Scenario, rendered: Rendered) -> ScenarioResult:
    """Check one rendered scenario against its expectation.

    Args:
        scenario: The scenario with its expectation.
        rendered: What the runtime produced for the scenario's last message.

    Returns:
        The result; ``failures`` lists every unmet check in a readable form.
    """
    e = scenario.expect
    failures = _contains("prompt", rendered.prompt, e.prompt_contains, e.prompt_not_contains)
    if e.max_strategies is not None and len(rendered.strategies) > e.max_strategies:
        failures.append(f"{len(rendered.strategies)} strategies applied (at most {e.max_strategies})")
    if e.reply_contains or e.reply_not_contains:
        if rendered.reply is None:
            failures.append("no reply to check")
        else:
            failures += _contains("reply", rendered.reply, e.reply_contains, e.reply_not_contains)
    if e.verdict is not None and rendered.verdict != e.verdict:
        failures.append(f'verdict "{rendered.verdict}" (expected "{e.verdict}")')
    return ScenarioResult(scenario.id, not failures, tuple(failures))


def replay(
    scenarios: Sequence[Scenario], render: Callable[[Scenario], Rendered]
) -> tuple[ScenarioResult, ...]:
    """Render and check every scenario, in order; errors raised by ``render`` propagate."""
    return tuple(check(s, render(s)) for s in scenarios)


def gate(
    scenarios: Sequence[Scenario],
    baseline: Callable[[Scenario], Rendered],
    candidate: Callable[[Scenario], Rendered],
) -> RegressionReport:
    """Replay the scenarios with the current and the candidate strategies and compare.

    Args:
        scenarios: The regression set, e.g. from :func:`load_scenarios`.
        baseline: Renders a scenario with the currently active strategies.
        candidate: Renders a scenario with the active plus the candidate strategies.

    Returns:
        The report; ``passed`` is the gate (the candidate's pass rate does not drop).
    """
    base, cand = replay(scenarios, baseline), replay(scenarios, candidate)
    base_rate, cand_rate = _rate(base), _rate(cand)
    was_passing = {r.id for r in base if r.passed}
    newly_failed = tuple(r.id for r in cand if not r.passed and r.id in was_passing)
    return RegressionReport(base, cand, base_rate, cand_rate, cand_rate >= base_rate, newly_failed)
