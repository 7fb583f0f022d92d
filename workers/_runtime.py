"""Per-thread async runtime for Celery tasks.

Tasks are sync functions; the services are async (asyncpg, redis.asyncio). Each worker
thread keeps one event loop with its own pool, so a thread pool and a prefork pool both
work. The loop runs all the time in a companion thread of its own and the task's thread
waits on it: a loop that ran only inside tasks held every connection a burst had opened for
as long as its thread stayed idle (the pool's idle lifetime is a timer on that loop), and saw
a server closing one only at the next task. Time limits are enforced here with
``asyncio.wait_for``: thread pools ignore Celery's hard limits, so a limit that must really
apply has to live inside the task.
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


CLOSE_TIMEOUT_S = 10.0  # a runtime's pool and clients closing at the worker's stop


class TaskDeadlineExceeded(TimeoutError):
    """The task ran past its in-task time limit."""


@dataclass
class Runtime:
    settings: Settings
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread | None = None  # the companion thread running `loop` (None: the caller runs it)
    _pool: asyncpg.Pool | None = None
    _redis: aioredis.Redis | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # per-thread caches (clients, models)
    in_task: bool = False  # a task body is on the loop (the shutdown leaves such a runtime alone)
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


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def current_runtime() -> Runtime:
    rt: Runtime | None = getattr(_local, "runtime", None)
    if rt is None or rt.loop.is_closed():  # none yet, or closed by the shutdown
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=_serve, args=(loop,), daemon=True,
                                  name=f"{threading.current_thread().name}-loop")
        thread.start()
        rt = Runtime(settings=get_settings(), loop=loop, thread=thread)
        _local.runtime = rt
        with _all_lock:
            _all.append(rt)
    return rt


def run_in_task(fn: Callable[[Runtime], Awaitable[T]], *, timeout_s: float) -> T:
    """Run ``fn(runtime)`` on this thread's loop, cancelled after ``timeout_s``."""
    rt = current_runtime()

    async def bounded() -> T:
        try:
            return await asyncio.wait_for(fn(rt), timeout=timeout_s)
        except TimeoutError as exc:
            raise TaskDeadlineExceeded(f"task exceeded its {timeout_s:.0f}s time limit") from exc

    rt.in_task = True
    try:
        return asyncio.run_coroutine_threadsafe(bounded(), rt.loop).result()
    finally:
        rt.in_task = False


def close_runtime(rt: Runtime) -> None:
    """Close `rt`'s pool and clients on its loop, then stop the loop and its thread."""
    if rt.thread is None:
        raise ValueError("this runtime's loop is run by its caller, who closes it (`await rt.aclose()`)")
    try:
        asyncio.run_coroutine_threadsafe(rt.aclose(), rt.loop).result(timeout=CLOSE_TIMEOUT_S)
    finally:
        rt.loop.call_soon_threadsafe(rt.loop.stop)
        rt.thread.join(timeout=CLOSE_TIMEOUT_S)
        if not rt.loop.is_running():
            rt.loop.close()


def close_runtimes() -> int:
    """Close every thread's runtime, at the worker's stop (its tasks have ended). Returns how many
    were closed."""
    with _all_lock:
        runtimes = list(_all)
        _all.clear()
    for rt in runtimes:
        if rt.in_task:  # a task still in flight (a hard shutdown): leave it to exit
            continue
        close_runtime(rt)
    return len(runtimes)
