"""Per-thread async runtime for Celery tasks.

Tasks are sync functions; the services are async (asyncpg, redis.asyncio). Each worker
thread keeps one event loop with its own pool, so a thread pool and a prefork pool both
work. Time limits are enforced here with ``asyncio.wait_for``: thread pools ignore
Celery's hard limits, so a limit that must really apply has to live inside the task.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import asyncpg
import redis.asyncio as aioredis

from infra.db.pool import create_pool
from infra.redis import create_async_redis
from infra.settings import Settings, get_settings

T = TypeVar("T")


class TaskDeadlineExceeded(TimeoutError):
    """The task ran past its in-task time limit."""


@dataclass
class Runtime:
    settings: Settings
    loop: asyncio.AbstractEventLoop
    _pool: asyncpg.Pool | None = None
    _redis: aioredis.Redis | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # per-thread caches (clients, models)

    async def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            self._pool = await create_pool(self.settings.database_url, min_size=1, max_size=4)
        return self._pool

    async def redis(self) -> aioredis.Redis:
        if self._redis is None:
            self._redis = create_async_redis(self.settings)
        return self._redis

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None


_local = threading.local()


def current_runtime() -> Runtime:
    rt: Runtime | None = getattr(_local, "runtime", None)
    if rt is None:
        rt = Runtime(settings=get_settings(), loop=asyncio.new_event_loop())
        _local.runtime = rt
    return rt


def run_in_task(fn: Callable[[Runtime], Awaitable[T]], *, timeout_s: float) -> T:
    """Run ``fn(runtime)`` on this thread's loop, cancelled after ``timeout_s``."""
    rt = current_runtime()

    async def bounded() -> T:
        try:
            return await asyncio.wait_for(fn(rt), timeout=timeout_s)
        except TimeoutError as exc:
            raise TaskDeadlineExceeded(f"task exceeded its {timeout_s:.0f}s time limit") from exc

    return rt.loop.run_until_complete(bounded())


def close_runtime() -> None:
    rt: Runtime | None = getattr(_local, "runtime", None)
    if rt is not None:
        rt.loop.run_until_complete(rt.aclose())
        rt.loop.close()
        _local.runtime = None
