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
from tianma.runtime import Runtime
from tianma.settings import Settings, load_settings
from tianma.storage.records import MemoryRecord, ScoredMemory
from tianma.turn import AppliedStrategy, InjectedMemory, Turn

__all__ = [
    "AppliedStrategy",
    "BackendUnavailableError",
    "ChatModelUnavailableError",
    "ConfigError",
    "InjectedMemory",
    "InvalidInputError",
    "MemoryRecord",
    "RecordNotFoundError",
    "Runtime",
    "ScoredMemory",
    "Settings",
    "TianmaError",
    "Turn",
    "load_settings",
]
