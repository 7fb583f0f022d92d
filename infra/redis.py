"""Redis clients. Every key Turnout writes carries the deployment's prefix."""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

from infra.settings import ConfigError, Settings


def _require(settings: Settings) -> str:
    if not settings.redis_url:
        raise ConfigError("TURNOUT_REDIS_URL is not set (or run `turnout up` for the embedded default)")
    return settings.redis_url


def create_async_redis(settings: Settings) -> aioredis.Redis:
    return aioredis.Redis.from_url(_require(settings), decode_responses=False, health_check_interval=30)


def create_sync_redis(settings: Settings) -> redis.Redis:
    return redis.Redis.from_url(_require(settings), decode_responses=False, health_check_interval=30)


def key(settings: Settings, *parts: str | int) -> str:
    """`key(s, "page", job_id, 2)` -> "turnout:page:<job_id>:2"."""
    return settings.redis_prefix + ":".join(str(p) for p in parts)
