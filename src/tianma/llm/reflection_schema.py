"""The JSON a reflection asks the LLM for (schema-constrained output, validated strictly)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_event_ids: list[str] = Field(min_length=1)
    """Events of the reflected window that support the item; items citing none are dropped."""


class NewFact(_Item):
    key: str = Field(min_length=1, description="dotted key, e.g. profile.city or preference.diet.sugar")
    content: str = Field(min_length=1)


class RevisedPreference(_Item):
    content: str = Field(min_length=1)
    replaces: str | None = Field(default=None, description="id of the memory this replaces, if any")


class Trigger(BaseModel):
    model_config = ConfigDict(extra="forbid")

    domains: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    hours: list[int] | None = None


class NewStrategy(_Item):
    trigger: Trigger
    action: str = Field(min_length=1, description="当……时应该……: an instruction for future replies")


class DeprecatedMemory(_Item):
    memory_id: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class SupersededStatement(BaseModel):
    """A statement the user made that a later message of theirs changes, negates or replaces."""

    model_config = ConfigDict(extra="forbid")

    statement_id: str = Field(min_length=1, description="id of a statement listed as still holding")
    by_event_id: str = Field(min_length=1, description="id of the later message that changes it")


class ReflectionResult(BaseModel):
    """What one reflection returns; the first four lists are required (possibly empty)."""

    model_config = ConfigDict(extra="forbid")

    new_facts: list[NewFact]
    revised_preferences: list[RevisedPreference]
    new_strategies: list[NewStrategy]
    deprecated_memories: list[DeprecatedMemory]
    superseded_statements: list[SupersededStatement] = Field(default_factory=list)
    """Optional: a model that leaves it out still gives the rest (an older prompt's answer does)."""
