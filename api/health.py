"""Dependency health: Postgres, Redis, the vector store, the LLM endpoint, embeddings.

Each check is one cheap probe under a short timeout, run concurrently. No retries: a health
check reports the state right now, and retrying would hide a flapping dependency and blow
the probe's own time budget.

The API process never opens the embedded vector store (Qdrant Edge allows one process; the
vector worker owns it), so with no Qdrant server configured the vector store and the local
embedding model are reported through the vector worker's heartbeat.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Literal

import asyncpg
import httpx
import redis.asyncio as aioredis
from qdrant_client import AsyncQdrantClient

from infra.local_llm.server import describe as describe_local_llm
from infra.results import WireModel
from infra.settings import EmbeddingProvider, Settings
from infra.status import Queue
from workers.taskstats import WorkerInfo, read_workers

CheckStatus = Literal["up", "down", "not_configured"]
CHECK_TIMEOUT_S = 2.0
REQUIRED = ("postgres", "redis")


class DependencyHealth(WireModel):
    status: CheckStatus
    required: bool
    latency_ms: float | None = None
    detail: str | None = None


class HealthReport(WireModel):
    status: Literal["ok", "degraded", "down"]  # down = a required dependency is down (HTTP 503)
    checks: dict[str, DependencyHealth]


class _Down(Exception):
    """A probe that reached the dependency and got a bad answer."""


async def _timed(name: str, probe: Callable[[], Awaitable[str | None]]) -> DependencyHealth:
    required = name in REQUIRED
    started = time.perf_counter()
    try:
        detail = await asyncio.wait_for(probe(), timeout=CHECK_TIMEOUT_S)
    except TimeoutError:
        return DependencyHealth(status="down", required=required, detail=f"no answer within {CHECK_TIMEOUT_S:g}s")
    except Exception as exc:  # any failure of the probe means the dependency is unusable now
        return DependencyHealth(status="down", required=required, detail=_describe(exc))
    latency = round((time.perf_counter() - started) * 1000, 2)
    return DependencyHealth(status="up", required=required, latency_ms=latency, detail=detail)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, _Down) else f"{type(exc).__name__}: {text}"[:300]


async def _openai_models(base_url: str, api_key: str) -> str | None:
    """GET {base_url}/models: cheap, needs the key to be accepted, runs no model."""
    async with httpx.AsyncClient(timeout=CHECK_TIMEOUT_S) as client:
        response = await client.get(base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {api_key}"})
    if response.status_code in (401, 403):
        raise _Down(f"endpoint rejected the API key (HTTP {response.status_code})")
    if response.status_code >= 400:
        raise _Down(f"GET /models answered HTTP {response.status_code}")
    return None


def _serving_worker(workers: list[WorkerInfo] | None, queues: tuple[str, ...]) -> WorkerInfo:
    if workers is None:
        raise _Down("unknown: worker heartbeats are kept in Redis, which is down")
    live = [w for w in workers if w.alive and any(q in w.queues for q in queues)]
    if not live:
        raise _Down(f"no live worker consumes {'/'.join(queues)} (start `turnout worker --queues rag,embeddings`)")
    return min(live, key=lambda w: w.last_seen_age_s)


class _Probes:
    """One probe per dependency; the vector-worker probes read the heartbeats the Redis probe fetched."""

    def __init__(self, settings: Settings, pool: asyncpg.Pool, redis: aioredis.Redis) -> None:
        self.settings, self.pool, self.redis = settings, pool, redis
        self.workers: list[WorkerInfo] | None = None  # None until Redis answered

    async def postgres(self) -> str | None:
        async with self.pool.acquire(timeout=CHECK_TIMEOUT_S) as conn:
            await conn.fetchval("SELECT 1")
        return None

    async def redis_ping(self) -> str | None:
        await self.redis.ping()
        self.workers = await read_workers(self.redis, self.settings)
        return None

    async def vector_store(self) -> str | None:
        settings = self.settings
        if settings.qdrant_url:
            client = AsyncQdrantClient(
                url=settings.qdrant_url, timeout=int(CHECK_TIMEOUT_S), check_compatibility=False,
                api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
            )
            try:
                info = await client.info()
            finally:
                await client.close()
            return f"Qdrant server {info.version}"
        worker = _serving_worker(self.workers, (Queue.RAG.value,))
        return f"embedded Qdrant Edge, opened by the rag worker (heartbeat {worker.last_seen_age_s:.0f}s ago)"

    async def llm(self) -> str | None:
        settings = self.settings
        assert settings.llm_base_url
        await _openai_models(settings.llm_base_url, settings.llm_api_key.get_secret_value())
        return f"models {settings.llm_router_model} (routing), {settings.llm_answer_model} (answers)"

    async def embeddings(self) -> str | None:
        settings = self.settings
        if settings.embedding_provider is EmbeddingProvider.OPENAI and settings.embedding_base_url:
            await _openai_models(settings.embedding_base_url, settings.embedding_api_key.get_secret_value())
            return f"model {settings.embedding_model}"
        worker = _serving_worker(self.workers, (Queue.RAG.value, Queue.EMBEDDINGS.value))
        return f"local model {settings.embedding_model} in the vector worker (heartbeat {worker.last_seen_age_s:.0f}s ago)"


async def _probe_all(settings: Settings, pool: asyncpg.Pool, redis: aioredis.Redis) -> dict[str, DependencyHealth]:
    probes = _Probes(settings, pool, redis)
    # The LLM probe runs alongside; the vector-worker checks need the heartbeats Redis holds.
    llm_check = asyncio.ensure_future(_timed("llm", probes.llm)) if settings.llm_configured else None
    checks: dict[str, DependencyHealth] = {}
    checks["postgres"], checks["redis"] = await asyncio.gather(_timed("postgres", probes.postgres),
                                                               _timed("redis", probes.redis_ping))
    checks["vectorStore"], checks["embeddings"] = await asyncio.gather(_timed("vectorStore", probes.vector_store),
                                                                        _timed("embeddings", probes.embeddings))
    checks["llm"] = await llm_check if llm_check is not None else DependencyHealth(
        status="not_configured", required=False,
        detail="not configured (degraded mode): deterministic routing, extractive answers",
    )
    if settings.llm_ready_url:  # the local llama-server profile: say which router is live
        note = describe_local_llm(settings.data_dir, up=checks["llm"].status == "up")
        if note is not None:
            checks["llm"] = checks["llm"].model_copy(update={"detail": note})
    return {k: checks[k] for k in ("postgres", "redis", "vectorStore", "llm", "embeddings")}


def _overall(checks: dict[str, DependencyHealth]) -> Literal["ok", "degraded", "down"]:
    if any(checks[k].status == "down" for k in REQUIRED):
        return "down"
    if any(c.status == "down" for c in checks.values()):
        return "degraded"
    return "ok"


async def check_health(settings: Settings, pool: asyncpg.Pool, redis: aioredis.Redis) -> HealthReport:
    checks = await _probe_all(settings, pool, redis)
    return HealthReport(status=_overall(checks), checks=checks)
