"""tianma: a personal assistant runtime that remembers the person and gets better with use."""

from __future__ import annotations

from tianma.errors import (
    BackendUnavailableError,
    ChatModelUnavailableError,
    ConfigError,
    InvalidInputError,
    RecordNotFoundError,
    TianmaError,
)
from tianma.results import (
    AbDecision,
    AggregationReport,
    BehaviourProposal,
    BehaviourReport,
    Decision,
    Edit,
    LateStats,
    MaintenanceReport,
    ReflectionItem,
    ReflectionReport,
    Review,
    Rollback,
    TopicStats,
    Version,
)
from tianma.runtime import Runtime
from tianma.settings import Settings, load_settings
from tianma.storage.records import MemoryRecord, ScoredMemory
from tianma.turn import AppliedStrategy, InjectedMemory, RedlineVerdict, Turn, TurnSignal

__all__ = [
    "AbDecision",
    "AggregationReport",
    "AppliedStrategy",
    "BackendUnavailableError",
    "BehaviourProposal",
    "BehaviourReport",
    "ChatModelUnavailableError",
    "ConfigError",
    "Decision",
    "Edit",
    "InjectedMemory",
    "InvalidInputError",
    "LateStats",
    "MaintenanceReport",
    "MemoryRecord",
    "RecordNotFoundError",
    "RedlineVerdict",
    "ReflectionItem",
    "ReflectionReport",
    "Review",
    "Rollback",
    "Runtime",
    "ScoredMemory",
    "Settings",
    "TianmaError",
    "TopicStats",
    "Turn",
    "TurnSignal",
    "Version",
    "load_settings",
]
