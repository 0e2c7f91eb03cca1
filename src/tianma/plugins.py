"""One plugin mechanism for built-ins and add-ons: entry points, plus in-process registration."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from tianma.errors import ConfigError, PluginNotFoundError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names to implementations for one entry-point group; loads lazily."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._loaded: dict[str, T] = {}

    def register(self, name: str, implementation: T) -> None:
        """Add an implementation in-process (tests, notebooks)."""
        self._loaded[name] = implementation

    def names(self) -> list[str]:
        """Every name available: registered in-process or installed as an entry point."""
        return sorted(set(self._loaded) | {ep.name for ep in entry_points(group=self.group)})

    def get(self, name: str) -> T:
        """The implementation named ``name``.

        Raises:
            PluginNotFoundError: nothing is registered or installed under that name.
        """
        if name not in self._loaded:
            eps = entry_points(group=self.group, name=name)
            if not eps:
                raise PluginNotFoundError(self.group, name, available=self.names())
            self._loaded[name] = next(iter(eps)).load()
        return self._loaded[name]

    def resolve(self, spec: str, default: str) -> T:
        """Pick by a settings value: ``builtin`` (= ``default``), an entry-point or registered
        name, or an import path ``package.module:attribute``.

        Raises:
            ConfigError: an import path that does not import.
            PluginNotFoundError: an unknown name.
        """
        if spec == "builtin":
            return self.get(default)
        if ":" in spec:
            module_name, _, attr = spec.partition(":")
            try:
                value: Any = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(f"{self.group}: cannot import {spec!r} ({exc})") from exc
            return value  # type: ignore[no-any-return]
        return self.get(spec)


nodes: Registry[Any] = Registry("tianma.nodes")
"""Turn-graph nodes: ``(state, runtime) -> update`` functions."""
