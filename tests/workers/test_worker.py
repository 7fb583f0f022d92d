"""The Celery app against the real Redis broker and a real worker process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from infra.status import Queue
from tests.support.services import WorkerGroup
from workers._runtime import TaskDeadlineExceeded, close_runtime, current_runtime, run_in_task
from workers.app import celery_app


def on_a_worker_thread(body: Callable[[], list[object]], *, timeout_s: float = 30) -> list[object]:
    """What `body` returns, or the exception it raised, run in a thread of its own as a Celery
    worker thread runs tasks; that thread's runtime is closed after."""
    outcome: list[object] = []

    def run() -> None:
        rt = current_runtime()
        try:
            outcome.extend(body())
        except BaseException as exc:
            outcome.append(exc)
        finally:
            close_runtime(rt)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=timeout_s)
    return outcome


def test_every_queue_is_declared_and_routed() -> None:
    declared = {q.name for q in celery_app.conf.task_queues}
    assert declared == {q.value for q in Queue}
    ping = celery_app.tasks["turnout.maintenance.ping"]
    assert ping.queue == "maintenance"
    assert ping.acks_late and ping.reject_on_worker_lost
    assert ping.expires is not None


def test_worker_runs_a_task(celery_worker: WorkerGroup) -> None:
    from workers.tasks.maintenance import ping

    reply = ping.apply_async().get(timeout=30)
    assert reply["pong"] is True
    assert reply["pid"] != 0


def test_in_task_time_limit_applies_in_a_thread() -> None:
    """Thread pools ignore Celery's hard limit: run_in_task must stop the body itself."""
    import asyncio

    async def too_slow(_rt: object) -> None:
        await asyncio.sleep(30)

    started = time.monotonic()
    outcome = on_a_worker_thread(lambda: [run_in_task(too_slow, timeout_s=0.3)], timeout_s=10)
    assert isinstance(outcome[0], TaskDeadlineExceeded)
    assert time.monotonic() - started < 5


def test_suite_fails_when_a_service_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support import services

    monkeypatch.setattr(services, "ADMIN_DSN", "postgresql://postgres@127.0.0.1:1/test")
    with pytest.raises(RuntimeError, match="PostgreSQL is not reachable"):
        services.require_postgres()
    monkeypatch.setattr(services, "TEST_REDIS_URL", "redis://127.0.0.1:1/0")
    with pytest.raises(RuntimeError, match="Redis is not reachable"):
        services.require_redis()


def test_a_connection_closed_while_the_worker_idles_is_replaced_on_acquire(settings: object) -> None:
    """A server closing a pooled connection between tasks (a restart, a terminated backend): the
    next task must get a fresh one, not fail on the dead one (a plain query: no retry here)."""
    import asyncio

    import asyncpg

    from workers._runtime import Runtime

    async def backend(rt: Runtime) -> int:
        pid: int = await (await rt.pool()).fetchval("SELECT pg_backend_pid()")
        return pid

    async def terminate(pid: int) -> None:
        conn = await asyncpg.connect(current_runtime().settings.database_url)
        try:
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
        finally:
            await conn.close()

    def body() -> list[object]:
        first = run_in_task(backend, timeout_s=10)
        asyncio.run(terminate(first))
        time.sleep(0.3)  # the server has closed it; no task runs meanwhile
        return [first, run_in_task(backend, timeout_s=10)]

    outcome = on_a_worker_thread(body)
    assert len(outcome) == 2, outcome
    assert outcome[0] != outcome[1]  # a new backend answered


def test_connections_a_task_opened_are_closed_while_its_thread_idles(
        settings: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst opens several connections in a thread's pool; once idle past the pool's lifetime
    they are closed even though no task runs in that thread again (a worker kept every one of
    them, in every thread, for as long as it idled)."""
    import asyncio

    import asyncpg

    from infra.db import pool as db_pool
    from workers._runtime import Runtime

    monkeypatch.setattr(db_pool, "INACTIVE_LIFETIME_S", 0.5)

    async def burst(rt: Runtime) -> set[int]:
        pool = await rt.pool()

        async def backend() -> int:
            async with pool.acquire() as conn:
                pid: int = await conn.fetchval("SELECT pg_backend_pid()")
                await asyncio.sleep(0.2)  # held together: the pool opens one each
                return pid

        return set(await asyncio.gather(backend(), backend(), backend()))

    async def alive(pids: set[int]) -> set[int]:
        conn = await asyncpg.connect(current_runtime().settings.database_url)
        try:
            rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[])", list(pids))
            return {r["pid"] for r in rows}
        finally:
            await conn.close()

    def body() -> list[object]:
        pids = run_in_task(burst, timeout_s=10)
        deadline = time.monotonic() + 5
        while (left := asyncio.run(alive(pids))) and time.monotonic() < deadline:
            time.sleep(0.2)  # this thread idles: no task runs on its runtime
        return [pids, left]

    outcome = on_a_worker_thread(body)
    assert len(outcome) == 2, outcome
    opened, left = outcome
    assert isinstance(opened, set) and len(opened) == 3
    assert left == set()
