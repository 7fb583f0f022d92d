"""Job event wake-ups (infra/db/job_listener.py) against the real PostgreSQL: NOTIFY per event
row, a watch per job, `final_only`, and recovery after the listening connection is killed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from infra.db.job_events import add_progress_event
from infra.db.job_listener import RESYNC, JobEventListener
from infra.db.jobs import claim_job, finish_job
from infra.status import JobStatus
from tests.infra.conftest import queued_job, terminate_listeners


@pytest.fixture
async def listener(fresh_dsn: str) -> AsyncIterator[JobEventListener]:
    listener = JobEventListener(fresh_dsn)
    await listener.start()
    yield listener
    await listener.close()


async def test_a_watch_wakes_for_its_own_jobs_events(pool: asyncpg.Pool, listener: JobEventListener) -> None:
    mine, other = await queued_job(pool), await queued_job(pool)
    with listener.watch(mine.id) as every, listener.watch(mine.id, final_only=True) as end:
        async with pool.acquire() as conn:
            await add_progress_event(conn, other.id, "routing", {})
            await add_progress_event(conn, mine.id, "routing", {})
        assert await every.wait(10)
        assert every.kinds == ["routing"]  # the other job's event woke nobody here
        # Notifications arrive in order: `every` saw "routing", so `end` has had it too, and ignored it.
        assert not await end.wait(0.2) and end.kinds == []

        async with pool.acquire() as conn:
            claimed = await claim_job(conn, mine.id, lease_s=60)
            assert claimed is not None
            await finish_job(conn, mine.id, attempt=claimed.attempts, status=JobStatus.SUCCEEDED, result=None,
                             error=None, usage={})
        assert await end.wait(10)
        assert end.kinds == ["succeeded"]
        while "succeeded" not in every.kinds:
            assert await every.wait(10)
        assert every.kinds == ["routing", "running", "succeeded"]


async def test_after_its_connection_is_killed_the_listener_reconnects_and_wakes_waiters(
    pool: asyncpg.Pool, listener: JobEventListener
) -> None:
    job = await queued_job(pool)
    with listener.watch(job.id, final_only=True) as watch:
        assert await terminate_listeners(pool) == 1
        # Woken to re-read (anything may have happened while nobody listened), once listening again.
        assert await watch.wait(15)
        assert watch.kinds == [RESYNC]
        assert listener.connected
        watch.reset()
        async with pool.acquire() as conn:
            claimed = await claim_job(conn, job.id, lease_s=60)
            assert claimed is not None
            await finish_job(conn, job.id, attempt=1, status=JobStatus.FAILED, result=None,
                             error={"code": "x", "message": "y"}, usage={})
        assert await watch.wait(10)
        assert watch.kinds == ["failed"]


async def test_start_fails_loudly_when_postgres_is_unreachable() -> None:
    from infra.settings import ConfigError

    with pytest.raises(ConfigError, match="cannot listen for job events"):
        await JobEventListener("postgresql://nobody@127.0.0.1:1/none").start()
