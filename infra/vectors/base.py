"""The vector-store interface shared by the two backends (Qdrant Edge in-process, Qdrant server).

A collection holds the chunks of one *collection version* (one embedding model and
chunking). Every point carries the same payload; the payload indexes on
``localization_id``, ``article_id`` and ``language`` are created with the collection,
before anything is ingested, so every filter below runs inside the engine's query
(pre-filter before top-K), never on fetched results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

# Keyword payload indexes every collection gets before ingest.
PAYLOAD_INDEXES = ("localization_id", "article_id", "language")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,127}$")


class VectorStoreError(RuntimeError):
    """The vector store refused an operation or could not be reached (after retries)."""


def check_collection_name(name: str) -> str:
    """Collection names become directory names (Edge) and URL parts (server): keep them plain."""
    if not _NAME.match(name):
        raise ValueError(f"invalid collection name {name!r}: use letters, digits, '_' and '-' (max 128)")
    return name


@dataclass(frozen=True)
class ChunkPoint:
    """One chunk to store: its vector and the payload every point carries."""

    id: str  # a UUID string: uuid5(localization_id, position), so re-writes replace
    vector: Sequence[float]
    localization_id: str
    article_id: str
    language: str
    position: int
    text: str
    content_hash: str

    def payload(self) -> dict[str, Any]:
        return {
            "localization_id": self.localization_id,
            "article_id": self.article_id,
            "language": self.language,
            "position": self.position,
            "text": self.text,
            "content_hash": self.content_hash,
        }


@dataclass(frozen=True)
class StoredChunk:
    """A chunk read back from a collection (vector only when asked for)."""

    id: str
    localization_id: str
    article_id: str
    language: str
    position: int
    text: str
    content_hash: str
    vector: list[float] | None = None

    @classmethod
    def from_payload(cls, point_id: object, payload: dict[str, Any] | None, vector: Any = None) -> StoredChunk:
        p = payload or {}
        return cls(
            id=str(point_id),
            localization_id=str(p.get("localization_id", "")),
            article_id=str(p.get("article_id", "")),
            language=str(p.get("language", "")),
            position=int(p.get("position", 0)),
            text=str(p.get("text", "")),
            content_hash=str(p.get("content_hash", "")),
            vector=[float(x) for x in vector] if vector is not None else None,
        )

    def to_point(self) -> ChunkPoint:
        if self.vector is None:
            raise ValueError(f"chunk {self.id} was read without its vector")
        return ChunkPoint(
            id=self.id, vector=self.vector, localization_id=self.localization_id, article_id=self.article_id,
            language=self.language, position=self.position, text=self.text, content_hash=self.content_hash,
        )


@dataclass(frozen=True)
class Hit:
    """A search result: a chunk and its similarity to the query vector."""

    score: float
    chunk: StoredChunk


class VectorStore(Protocol):
    """What Turnout needs from a vector engine. Both backends pass the same tests.

    Methods are synchronous: Edge runs in-process in microseconds, and the server client
    is called from worker threads that each run one task at a time.
    """

    backend: str  # "edge" | "server"
    supports_aliases: bool  # server: reads follow a real alias; Edge: the pointer lives in Postgres
    query_count: int  # vector queries run so far (observability; tests prove "zero queries")

    def ensure_collection(self, name: str, dimension: int) -> None:
        """Create the collection with its payload indexes if missing (idempotent)."""
        ...

    def collection_exists(self, name: str) -> bool: ...

    def list_collections(self) -> list[str]: ...

    def drop_collection(self, name: str) -> None: ...

    def dimension(self, name: str) -> int: ...

    def payload_indexes(self, name: str) -> set[str]: ...

    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None: ...

    def delete_localizations(self, name: str, localization_ids: Sequence[str], *, keep: Sequence[str] = ()) -> None:
        """Delete the chunks of these localizations, except the points whose ids are in `keep`."""

    def chunks_of(
        self, name: str, localization_ids: Sequence[str], *, with_vectors: bool = False
    ) -> list[StoredChunk]: ...

    def count(self, name: str, *, localization_ids: Sequence[str] | None = None) -> int: ...

    def search(
        self,
        name: str,
        vector: Sequence[float],
        *,
        limit: int,
        language: str | Sequence[str] | None = None,
        scope: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Hit]:
        """Top-``limit`` chunks; ``language`` (a code or several) and ``scope`` (localization ids) filter inside
        the engine's query; so does ``exclude`` (localization ids never returned: those hidden since
        indexing). An empty scope returns [] without querying."""
        ...

    def optimize(self, name: str) -> None:
        """Build indexes for a finished version before it starts serving reads."""
        ...

    def set_alias(self, alias: str, name: str) -> None: ...

    def resolve_alias(self, alias: str) -> str | None: ...

    def close(self) -> None: ...
