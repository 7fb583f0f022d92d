"""The vector store: one small interface (``VectorStore``), two backends, one factory.

``TURNOUT_QDRANT_URL`` set → a Qdrant server through ``qdrant-client``; unset → Qdrant
Edge in-process at ``settings.qdrant_path``. Edge may be opened by one process only, so
only the worker consuming ``rag,embeddings`` calls ``process_vector_store``; the API and
the front worker never open the store.
"""

from __future__ import annotations

import threading
from pathlib import Path

from infra.settings import Settings
from infra.vectors.base import (
    PAYLOAD_INDEXES,
    ChunkPoint,
    Hit,
    StoredChunk,
    VectorStore,
    VectorStoreError,
    check_collection_name,
)

__all__ = [
    "PAYLOAD_INDEXES",
    "ChunkPoint",
    "Hit",
    "StoredChunk",
    "VectorStore",
    "VectorStoreError",
    "check_collection_name",
    "close_process_vector_store",
    "open_vector_store",
    "process_vector_store",
]


def open_vector_store(settings: Settings, *, edge_path: Path | None = None) -> VectorStore:
    """A new store for these settings (tests pass their own ``edge_path``)."""
    if settings.qdrant_url:
        from infra.vectors.server import ServerVectorStore

        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return ServerVectorStore.connect(settings.qdrant_url, api_key)
    from infra.vectors.edge import EdgeVectorStore

    return EdgeVectorStore(edge_path or settings.qdrant_path)


_process_store: VectorStore | None = None
_process_lock = threading.Lock()


def process_vector_store(settings: Settings) -> VectorStore:
    """The one store of this process, shared by its threads (Edge shards open once per process)."""
    global _process_store
    with _process_lock:
        if _process_store is None:
            _process_store = open_vector_store(settings)
        return _process_store


def close_process_vector_store() -> bool:
    """Close this process's store (a worker's stop); False when it was never opened."""
    global _process_store
    with _process_lock:
        if _process_store is None:
            return False
        _process_store.close()
        _process_store = None
        return True
