"""The request gate's second signal: how close a message is, in meaning, to any passage of the
collection — the largest cosine between the message's embedding and the serving version's chunk
vectors (the same model the version was embedded with, so the two are comparable).

Words alone cannot tell "the capital of Australia" or "a linked list in Java" from a question
about the articles: the collection happens to use each of those words. A message about something
else is far from every passage in meaning: on the dev half most real questions that reach the
gate score 0.30–0.75 and most off-topic ones 0.10–0.35 (docs/router.md, "The request gate").

The vectors are read from PostgreSQL (``rag_chunks.embedding``), not from the vector store: the
router runs in another process than the vector worker, and Qdrant Edge opens a shard in one
process only. A version's vectors are loaded once per process (``MAX_VECTORS`` at most, a sample
spread over the version) and kept until another version serves reads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import asyncpg
import numpy as np

from infra.db.collections import active_version
from infra.db.rag_chunks import chunk_embeddings
from infra.settings import ConfigError
from retrieval.embeddings import LOCAL_MODEL, EmbedderRegistry, EmbeddingError, normalize_rows

log = logging.getLogger("turnout.router")

# 50,000 chunks of 512 float32 dimensions: 100 MB per routing process at most; the shared corpus
# has ~4,200. Beyond it the sample is spread over the whole version (point ids are hashes).
MAX_VECTORS = 50_000
# How long a process trusts the serving version it read (a re-embedding switches reads rarely).
VERSION_TTL_S = 60.0
# A message's embedding must not hold up routing: past this the gate reads words only.
EMBED_TIMEOUT_S = 5.0
# The models whose cosines the gate's meaning bars (router/gate.py CLOSE_IN_MEANING, FAR_IN_MEANING)
# were measured on. Another model's sit on another scale (multilingual-e5's crowd a narrow band near
# the top), so the same bars would judge blind there: for a version embedded by any other model the
# gate reads words only, until bars are measured for it.
MEASURED_WITH = frozenset({LOCAL_MODEL})


@dataclass(frozen=True)
class _Loaded:
    collection: str
    model: str
    vectors: np.ndarray  # (n, dimension) float32, rows L2-normalized


class CollectionSimilarity:
    """``similarity(text)``: the message's largest cosine to a passage of the serving version
    (None: no version with stored vectors, one embedded by a model the bars were not measured on
    (``MEASURED_WITH``), or the embedder failed — the gate then reads words only)."""

    def __init__(self, pool: asyncpg.Pool, embedders: EmbedderRegistry) -> None:
        self.pool = pool
        self.embedders = embedders
        self._loaded: _Loaded | None = None
        self._unmeasured: str | None = None  # the serving version last found embedded by an unmeasured model
        self._checked_at = -VERSION_TTL_S
        self._lock = asyncio.Lock()

    async def _vectors(self) -> _Loaded | None:
        if time.monotonic() - self._checked_at < VERSION_TTL_S:
            return self._loaded
        async with self._lock:
            if time.monotonic() - self._checked_at < VERSION_TTL_S:
                return self._loaded
            version = await active_version(self.pool)
            if version is None:
                self._loaded = None
            elif version.model not in MEASURED_WITH:
                if self._unmeasured != version.name:
                    log.warning("the request gate reads words only: its meaning bars are not measured for the "
                                "serving version's embedding model %s", version.model)
                self._loaded, self._unmeasured = None, version.name
            elif self._loaded is None or self._loaded.collection != version.name:
                rows = await chunk_embeddings(self.pool, version.name, limit=MAX_VECTORS)
                self._loaded = _Loaded(version.name, version.model, _matrix(rows, version.dimension)) if rows else None
            self._checked_at = time.monotonic()
            return self._loaded

    async def similarity(self, text: str) -> float | None:
        loaded = await self._vectors()
        if loaded is None or not text.strip():
            return None
        try:
            embedded = await self.embedders.get(loaded.model).embed(
                [text], deadline=time.monotonic() + EMBED_TIMEOUT_S)
        except (EmbeddingError, ConfigError, TimeoutError) as exc:  # never fails routing: words only
            log.warning("the request gate could not embed a message (%s); it reads its words only", exc)
            return None
        if embedded.shape != (1, loaded.vectors.shape[1]):
            return None
        return round(float((loaded.vectors @ embedded[0]).max()), 4)


def _matrix(rows: list[bytes], dimension: int) -> np.ndarray:
    vectors = np.frombuffer(b"".join(r for r in rows if len(r) == 4 * dimension), dtype="<f4")
    return normalize_rows(vectors.reshape(-1, dimension))
