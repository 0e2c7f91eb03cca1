"""Which vector index a data home uses: Qdrant Edge in ``<home>/vectors`` unless a Qdrant server
is configured; a home of an older tianma (qdrant-client's local mode) is moved over first."""

from __future__ import annotations

from tianma.settings import Settings
from tianma.storage.edge_index import EdgeVectorIndex
from tianma.storage.protocols import MemoryStore, VectorIndex
from tianma.storage.qdrant_index import QdrantVectorIndex
from tianma.storage.qdrant_tenants import QdrantTenantIndex
from tianma.storage.vector_migration import Progress, migrate_local_mode


def open_vector_index(
    settings: Settings, dim: int, store: MemoryStore, progress: Progress | None = None
) -> tuple[VectorIndex, int | None]:
    """The home's vector index, and how many vectors were moved out of an old local-mode
    folder (``None``: none was there) — after a move the caller repairs against SQL.

    Raises:
        BackendUnavailableError: another process holds the index, or the server is down.
        ConfigError: the index was built for another embedder.
    """
    qs = settings.qdrant
    if qs.url:
        api_key = qs.api_key.get_secret_value() if qs.api_key else None
        if qs.layout == "per_user":
            return QdrantVectorIndex.from_options(dim=dim, url=qs.url, api_key=api_key, prefix=qs.collection_prefix), None
        return QdrantTenantIndex.connect(dim, qs.url, api_key, qs.collection_prefix), None
    moved = migrate_local_mode(
        settings.qdrant_path, settings.vectors_path, dim, store.users(), qs.collection_prefix, progress
    )
    return EdgeVectorIndex(settings.vectors_path, dim), moved
