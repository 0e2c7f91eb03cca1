"""One value per embedder object, computed once."""

from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass
from pathlib import Path

from tianma.memory.per_embedder import PerEmbedder, shipped_path


@dataclass
class Unhashable:  # eq=True makes it unhashable, as a plugin's embedder may be
    name: str


class Plain:
    name = "plain"


def test_once_per_embedder_even_an_unhashable_one() -> None:
    made: list[str] = []
    cache: PerEmbedder[int] = PerEmbedder(lambda e: made.append(e.name) or len(made))
    a, b = Unhashable("a"), Unhashable("a")  # equal, but two embedders
    assert cache.get(a) == 1 and cache.get(a) == 1  # type: ignore[arg-type]
    assert cache.get(b) == 2 and made == ["a", "a"]  # type: ignore[arg-type]


def test_an_embedder_is_not_kept_alive_by_the_cache() -> None:
    cache: PerEmbedder[object] = PerEmbedder(lambda e: object())
    embedder = Plain()
    cache.get(embedder)  # type: ignore[arg-type]
    alive = weakref.ref(embedder)
    del embedder
    gc.collect()
    assert alive() is None


def test_shipped_names_are_safe_file_names() -> None:
    assert shipped_path(Path("d"), "x", "nomic/embed:latest") == Path("d/x.nomic_embed_latest.npz")
