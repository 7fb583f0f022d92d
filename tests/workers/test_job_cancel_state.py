"""Cancelling a running job in SQL (infra/db/job_cancel.py): the request, the runner's fenced end,
and the races with the job's own end and with a retry (each order leaves one final state, one
final event, one webhook delivery)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from infra.db import job_cancel, job_sweeps
from infra.db import jobs as jobs_db
from infra.db.api_keys import create_key
from infra.status import JobStatus

LEASE_S = 60.0


@pytest.fixture
def pool(module_pool: asyncpg.Pool) -> asyncpg.Pool:
    return module_pool  # the module's own database (tests/workers/conftest.py)


async def _running(conn: asyncpg.Connection) -> jobs_db.JobRow:
    key_id = (await create_key(conn, "cancel")).key.id
    job, _ = await jobs_db.create_job(
        conn, api_key_id=key_id, question="q", answer_language=None, page_size=None,
        webhook_url="https://hooks.example.com/x", idempotency_key=None, request_hash="h", lease_s=LEASE_S,
    )
    claimed = await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
    assert claimed is not None
    return claimed


async def _finals(conn: asyncpg.Connection, job_id: str) -> tuple[list[str], int]:
    kinds = [r["kind"] for r in await conn.fetch(
        "SELECT kind FROM job_events WHERE job_id = $1 AND kind IN ('succeeded', 'failed', 'cancelled')", job_id)]
    deliveries = await conn.fetchval("SELECT count(*) FROM webhook_deliveries WHERE job_id = $1", job_id)
    return kinds, deliveries


async def test_a_running_job_records_the_request_and_its_runner_ends_it(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _running(conn)
        assert not await job_cancel.cancel_requested(conn, job.id)
        outcome, finished, running = await job_cancel.request_cancel(conn, job.id, api_key_id=job.api_key_id or "")
        assert outcome == "requested" and finished is None and running is not None
        assert running.status is JobStatus.RUNNING and running.cancel_requested_at is not None
        assert await job_cancel.cancel_requested(conn, job.id)
        # a runner of an older attempt cannot end it
        assert await job_cancel.cancel_running(conn, job.id, attempt=job.attempts + 1, usage={}) is None
        done = await job_cancel.cancel_running(conn, job.id, attempt=job.attempts, usage={"llmCalls": 1})
        assert done is not None and done.job.status is JobStatus.CANCELLED and done.delivery_id is not None
        assert done.job.usage == {"llmCalls": 1}
        assert await _finals(conn, job.id) == (["cancelled"], 1)
        again, _, _ = await job_cancel.request_cancel(conn, job.id, api_key_id=job.api_key_id or "")
        assert again is JobStatus.CANCELLED


async def test_the_runner_needs_a_request_to_cancel(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _running(conn)
        assert await job_cancel.cancel_running(conn, job.id, attempt=job.attempts, usage={}) is None


@pytest.mark.parametrize("first", ["cancel", "success"])
async def test_cancel_against_success_leaves_one_end(pool: asyncpg.Pool, first: str) -> None:
    async with pool.acquire() as conn:
        job = await _running(conn)
    key = job.api_key_id or ""

    async def cancel() -> None:
        async with pool.acquire() as conn:
            await job_cancel.request_cancel(conn, job.id, api_key_id=key)
            await job_cancel.cancel_running(conn, job.id, attempt=job.attempts, usage={})

    async def succeed() -> None:
        async with pool.acquire() as conn:
            await jobs_db.finish_job(conn, job.id, attempt=job.attempts, status=JobStatus.SUCCEEDED, result=None,
                                     error=None, usage={})

    steps = [cancel, succeed] if first == "cancel" else [succeed, cancel]
    for step in steps:
        await step()
    await asyncio.gather(cancel(), succeed())  # and both again, concurrently: still one end
    async with pool.acquire() as conn:
        final = await jobs_db.get_job(conn, job.id)
        kinds, deliveries = await _finals(conn, job.id)
    assert final is not None
    assert final.status is (JobStatus.CANCELLED if first == "cancel" else JobStatus.SUCCEEDED)
    assert kinds == [final.status.value] and deliveries == 1


async def test_a_cancel_requested_before_a_retry_is_not_retried(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _running(conn)
        await job_cancel.request_cancel(conn, job.id, api_key_id=job.api_key_id or "")
        released = await jobs_db.release_job(conn, job.id, attempt=job.attempts, retry_in_s=5, reason="redis down")
        assert not released  # the runner cancels instead (workers/tasks/jobs.py `_release`)
        done = await job_cancel.cancel_running(conn, job.id, attempt=job.attempts, usage={})
        assert done is not None and done.job.status is JobStatus.CANCELLED
        assert await _finals(conn, job.id) == (["cancelled"], 1)


async def test_a_cancel_after_a_retry_cancels_the_queued_job(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _running(conn)
        assert await jobs_db.release_job(conn, job.id, attempt=job.attempts, retry_in_s=5, reason="redis down")
        outcome, finished, running = await job_cancel.request_cancel(conn, job.id, api_key_id=job.api_key_id or "")
        assert outcome == "cancelled" and finished is not None and running is None
        assert await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S) is None  # the retry's message finds it final
        assert await _finals(conn, job.id) == (["cancelled"], 1)


async def test_the_sweeper_cancels_a_lost_job_whose_cancel_was_requested(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _running(conn)
        await job_cancel.request_cancel(conn, job.id, api_key_id=job.api_key_id or "")
        await conn.execute("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", job.id)
        swept = await job_sweeps.sweep_expired(conn, lease_s=LEASE_S, max_attempts=3)
        assert job.id not in swept.requeued  # not run again: its client asked to stop it
        ended = [f for f in swept.failed if f.job.id == job.id]
        assert len(ended) == 1 and ended[0].job.status is JobStatus.CANCELLED and ended[0].delivery_id is not None
        assert await _finals(conn, job.id) == (["cancelled"], 1)
