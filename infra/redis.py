"""Redis clients. Every key Turnout writes carries the deployment's prefix."""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio as aioredis
import redis.exceptions

from infra.settings import ConfigError, Settings

# A frozen or unreachable Redis must not hang a request: a connect or a reply that takes longer
# fails (redis TimeoutError / ConnectionError), and the API answers 503 (SPEC: within seconds).
# No Turnout client blocks server-side (no BLPOP, no pub/sub), so a short read timeout is safe.
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 2.0
TIMEOUTS: dict[str, Any] = {"socket_connect_timeout": CONNECT_TIMEOUT_S, "socket_timeout": READ_TIMEOUT_S}


def _require(settings: Settings) -> str:
    if not settings.redis_url:
        raise ConfigError("TURNOUT_REDIS_URL is not set (or run `turnout up` for the embedded default)")
    return settings.redis_url


def create_async_redis(settings: Settings) -> aioredis.Redis:
    return aioredis.Redis.from_url(_require(settings), decode_responses=False, health_check_interval=30, **TIMEOUTS)


def create_sync_redis(settings: Settings) -> redis.Redis:
    return redis.Redis.from_url(_require(settings), decode_responses=False, health_check_interval=30, **TIMEOUTS)


def key(settings: Settings, *parts: str | int) -> str:
    """`key(s, "page", job_id, 2)` -> "turnout:page:<job_id>:2"."""
    return settings.redis_prefix + ":".join(str(p) for p in parts)
