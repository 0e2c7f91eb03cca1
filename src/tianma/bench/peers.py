"""Peer memory systems as baselines: LangGraph's InMemoryStore and mem0 (when installed)."""

from __future__ import annotations

from tianma.bench.locomo import SystemFactory
from tianma.bench.systems import CachingEmbedder


def factories(embedder: CachingEmbedder) -> list[SystemFactory]:
    """Factories of the peers that can run here (none yet)."""
    return []
