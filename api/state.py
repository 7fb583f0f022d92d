"""Process-wide resources the API opens at start-up and closes at shutdown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
import redis.asyncio as aioredis

from api.ratelimit import SubmissionLimiter
from infra.db.job_listener import JobEventListener
from infra.db.key_cache import ApiKeyCache
from infra.db.pool import create_pool
from infra.redis import create_async_redis
from infra.settings import Settings
from workers.dispatch import Producer, create_producer


@dataclass
class AppState:
    settings: Settings
    pool: asyncpg.Pool
    redis: aioredis.Redis
    job_events: JobEventListener
    api_keys: ApiKeyCache
    producer: Producer  # sends the job and webhook messages
    limiter: SubmissionLimiter  # the per-key submission limit (its Redis connections reused)


@asynccontextmanager
async def open_state(settings: Settings, *, pool_size: int = 10) -> AsyncIterator[AppState]:
    """Open the API's resources (the HTTP app's lifespan and `turnout mcp` over stdio), close them after."""
    pool = await create_pool(settings.database_url, min_size=1, max_size=pool_size)
    job_events = JobEventListener(settings.database_url)
    api_keys = ApiKeyCache(job_events)  # subscribes before the listener starts: same connection
    try:
        await job_events.start()
    except BaseException:
        await pool.close()
        raise
    redis = create_async_redis(settings)
    try:
        yield AppState(settings=settings, pool=pool, redis=redis, job_events=job_events, api_keys=api_keys,
                       producer=create_producer(settings), limiter=SubmissionLimiter(settings))
    finally:
        await job_events.close()
        await redis.aclose()
        await pool.close()
