"""Per-thread async runtime for Celery tasks.

Tasks are sync functions; the services are async (asyncpg, redis.asyncio). Each worker
thread keeps one event loop with its own pool, so a thread pool and a prefork pool both
work. Time limits are enforced here with ``asyncio.wait_for``: thread pools ignore
Celery's hard limits, so a limit that must really apply has to live inside the task.
"""

from __future__ import annotations

import asyncio
import inspect
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


CATCH_UP_TURNS = 4


class TaskDeadlineExceeded(TimeoutError):
    """The task ran past its in-task time limit."""


@dataclass
class Runtime:
    settings: Settings
    loop: asyncio.AbstractEventLoop
    _pool: asyncpg.Pool | None = None
    _redis: aioredis.Redis | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # per-thread caches (clients, models)
    # What `aclose` closes besides the pool and Redis: the extras' clients, registered with them.
    _closers: list[Callable[[], object]] = field(default_factory=list)

    def close_with(self, close: Callable[[], object]) -> None:
        """Have `aclose` call `close()` (awaited when it returns an awaitable): an extra's client."""
        self._closers.append(close)

    async def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            # No connection at creation (min_size=0): a server down at the first task is then a
            # transient `DatabaseUnavailable` at acquire, retried like any other, not a ConfigError.
            self._pool = await create_pool(self.settings.database_url, min_size=0, max_size=4)
        return self._pool

    async def redis(self) -> aioredis.Redis:
        if self._redis is None:
            self._redis = create_async_redis(self.settings)
        return self._redis

    async def aclose(self) -> None:
        closers, self._closers = self._closers, []
        for close in reversed(closers):
            outcome = close()
            if inspect.isawaitable(outcome):
                await outcome
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None


_local = threading.local()
_all: list[Runtime] = []  # every thread's, for the worker's shutdown (`close_runtimes`)
_all_lock = threading.Lock()


def current_runtime() -> Runtime:
    rt: Runtime | None = getattr(_local, "runtime", None)
    if rt is None or rt.loop.is_closed():  # none yet, or closed by the shutdown
        rt = Runtime(settings=get_settings(), loop=asyncio.new_event_loop())
        _local.runtime = rt
        with _all_lock:
            _all.append(rt)
    return rt


async def _catch_up() -> None:
    """Let the loop handle what happened while it was idle between tasks (it runs only inside one)
    before the task body: a server that closed a pooled connection meanwhile is seen, so the pool
    drops that connection and opens a new one on acquire instead of handing it out; inactive
    connections past their lifetime are closed. A few turns: the first queues the I/O callbacks
    behind this task's own step, the next ones run them and the connection-lost callbacks they
    schedule (measured: three suffice for a terminated backend; two leave it half-closed). What
    slips through anyway is retried by the callers (`workers/_db_retry.py`)."""
    for _ in range(CATCH_UP_TURNS):
        await asyncio.sleep(0)


def run_in_task(fn: Callable[[Runtime], Awaitable[T]], *, timeout_s: float) -> T:
    """Run ``fn(runtime)`` on this thread's loop, cancelled after ``timeout_s``."""
    rt = current_runtime()

    async def bounded() -> T:
        await _catch_up()
        try:
            return await asyncio.wait_for(fn(rt), timeout=timeout_s)
        except TimeoutError as exc:
            raise TaskDeadlineExceeded(f"task exceeded its {timeout_s:.0f}s time limit") from exc

    return rt.loop.run_until_complete(bounded())


def _close(rt: Runtime) -> None:
    try:
        rt.loop.run_until_complete(rt.aclose())
    finally:
        rt.loop.close()


def close_runtimes() -> int:
    """Close every thread's runtime, at the worker's shutdown (its tasks have ended, so no loop is
    running: each is run once more, from the calling thread, to close its pool and clients).
    Returns how many were closed."""
    with _all_lock:
        runtimes = list(_all)
        _all.clear()
    for rt in runtimes:
        if rt.loop.is_running():  # a task still in flight (a hard shutdown): leave it to exit
            continue
        _close(rt)
    return len(runtimes)
