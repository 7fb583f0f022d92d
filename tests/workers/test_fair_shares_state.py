"""Fair shares in SQL (infra/db/fair_shares.py, the cap in `create_job` / `retry_job`): a key's jobs
over its cap are parked, never claimed nor swept while parked, dispatched one per freed slot
(interactive first, oldest first), never past the cap under concurrency, and none is lost. In a
database of its own, so no other stack's sweeper touches these jobs."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from infra.db import fair_shares as fair_db
from infra.db import job_sweeps
from infra.db import jobs as jobs_db
from infra.db.api_keys import create_key
from infra.db.job_cancel import request_cancel
from infra.db.job_retries import retry_job
from infra.results import QuestionResult
from infra.status import JobPriority, JobStatus, ResultStatus, ResultType

LEASE_S = 60.0
CAP = 2


@pytest.fixture
def pool(module_pool: asyncpg.Pool) -> asyncpg.Pool:
    return module_pool  # the module's own database (tests/workers/conftest.py)


async def _key(conn: asyncpg.Connection) -> str:
    return (await create_key(conn, "fair")).key.id


async def _submit(conn: asyncpg.Connection, key_id: str, *, priority: JobPriority = JobPriority.INTERACTIVE,
                  cap: int = CAP) -> jobs_db.JobRow:
    job, created = await jobs_db.create_job(
        conn, api_key_id=key_id, question="q", answer_language=None, page_size=None, webhook_url=None,
        idempotency_key=None, request_hash="h", lease_s=LEASE_S, priority=priority, in_flight_cap=cap,
    )
    assert created
    return job


_RESULT = QuestionResult(result_type=ResultType.ANSWER, status=ResultStatus.ANSWERED, answer="done")

async def _finish(conn: asyncpg.Connection, job_id: str) -> None:
    claimed = await jobs_db.claim_job(conn, job_id, lease_s=LEASE_S)
    assert claimed is not None
    done = await jobs_db.finish_job(conn, job_id, attempt=claimed.attempts, status=JobStatus.SUCCEEDED,
                                    result=_RESULT, error=None, usage={})
    assert done is not None


async def test_jobs_over_the_cap_are_parked_and_never_claimed_nor_swept(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        key_id = await _key(conn)
        first, second, third = [await _submit(conn, key_id) for _ in range(3)]
        assert not first.parked and not second.parked
        assert third.parked and third.lease_expires_at is None and third.dispatched_at is None
        assert await fair_db.in_flight(conn, key_id) == (2, 1)
        assert await jobs_db.claim_job(conn, third.id, lease_s=LEASE_S) is None  # a stray message runs nothing
        await conn.execute("UPDATE jobs SET updated_at = now() - interval '1 day' WHERE id = $1", third.id)
        swept = await job_sweeps.sweep_expired(conn, lease_s=LEASE_S, max_attempts=3)
        assert third.id not in swept.requeued and third.id not in [f.job.id for f in swept.failed]
        assert third.id not in await job_sweeps.sweep_undispatched(conn, grace_s=0)
        row = await jobs_db.get_job(conn, third.id)
        assert row is not None and row.parked and row.attempts == 0
        events = await conn.fetch("SELECT kind, data FROM job_events WHERE job_id = $1", third.id)
        assert [(e["kind"], e["data"]) for e in events] == [("queued", {"parked": True})]
        # Another key is not held back by this one's flood.
        other = await _submit(conn, await _key(conn))
        assert not other.parked


async def test_an_ended_job_hands_its_slot_to_the_next_interactive_job_first(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        key_id = await _key(conn)
        running = [await _submit(conn, key_id) for _ in range(CAP)]
        batch = await _submit(conn, key_id, priority=JobPriority.BATCH)
        interactive = [await _submit(conn, key_id) for _ in range(2)]
        assert batch.parked and all(j.parked for j in interactive)
        # Full: nothing to hand over.
        assert await fair_db.dispatch_parked(conn, key_id, cap=CAP, lease_s=LEASE_S) == []
        await _finish(conn, running[0].id)
        turn = await fair_db.dispatch_parked(conn, key_id, cap=CAP, lease_s=LEASE_S)
        assert turn == [fair_db.Dispatched(interactive[0].id, JobPriority.INTERACTIVE)]  # not the older batch job
        assert await fair_db.dispatch_parked(conn, key_id, cap=CAP, lease_s=LEASE_S) == []  # once only
        dispatched = await jobs_db.get_job(conn, interactive[0].id)
        assert dispatched is not None and not dispatched.parked and dispatched.lease_expires_at is not None
        assert await jobs_db.claim_job(conn, interactive[0].id, lease_s=LEASE_S) is not None
        await _finish(conn, running[1].id)
        assert [t.id for t in await fair_db.dispatch_parked(conn, key_id, cap=CAP, lease_s=LEASE_S)] == \
            [interactive[1].id]
        await jobs_db.finish_job(conn, interactive[0].id, attempt=1, status=JobStatus.FAILED, result=None,
                                 error={"code": "x", "message": "y"}, usage={})
        assert await fair_db.dispatch_parked(conn, key_id, cap=CAP, lease_s=LEASE_S) == \
            [fair_db.Dispatched(batch.id, JobPriority.BATCH)]
        assert await fair_db.in_flight(conn, key_id) == (2, 0)


async def test_concurrent_submissions_and_hand_overs_never_pass_the_cap(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        key_id = await _key(conn)

    async def submit() -> jobs_db.JobRow:
        async with pool.acquire() as conn:
            return await _submit(conn, key_id, cap=3)

    jobs = await asyncio.gather(*(submit() for _ in range(24)))
    assert sum(not j.parked for j in jobs) == 3
    async with pool.acquire() as conn:
        for job in [j for j in jobs if not j.parked]:
            await _finish(conn, job.id)

    async def hand_over() -> list[fair_db.Dispatched]:
        async with pool.acquire() as conn:
            return await fair_db.dispatch_parked(conn, key_id, cap=3, lease_s=LEASE_S)

    turns = [t for batch in await asyncio.gather(*(hand_over() for _ in range(6))) for t in batch]
    assert len(turns) == len({t.id for t in turns}) == 3  # three slots freed: three jobs, each once
    async with pool.acquire() as conn:
        assert await fair_db.in_flight(conn, key_id) == (3, 24 - 6)


async def test_a_parked_job_cancels_at_once_and_cannot_be_retried_until_it_ends(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        key_id = await _key(conn)
        running = [await _submit(conn, key_id) for _ in range(CAP)]
        parked, behind = await _submit(conn, key_id), await _submit(conn, key_id)
        not_yet = await retry_job(conn, parked.id, api_key_id=key_id, force=False, lease_s=LEASE_S, in_flight_cap=CAP)
        assert not_yet.outcome == "not_final"
        outcome, finished, _ = await request_cancel(conn, parked.id, api_key_id=key_id)
        assert outcome == "cancelled" and finished is not None and finished.job.status is JobStatus.CANCELLED
        await _finish(conn, running[0].id)
        # The cancelled job is not dispatched: the freed slot goes to the one behind it.
        assert [t.id for t in await fair_db.dispatch_parked(conn, key_id, cap=CAP, lease_s=LEASE_S)] == [behind.id]
        assert await jobs_db.claim_job(conn, parked.id, lease_s=LEASE_S) is None


async def test_a_retry_over_the_cap_is_parked_and_dispatched_when_a_slot_frees(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        key_id = await _key(conn)
        first = await _submit(conn, key_id, priority=JobPriority.BATCH)
        await _finish(conn, first.id)
        running = [await _submit(conn, key_id) for _ in range(CAP)]
        retry = await retry_job(conn, first.id, api_key_id=key_id, force=False, lease_s=LEASE_S, in_flight_cap=CAP)
        assert retry.outcome == "created" and retry.job is not None
        assert retry.job.parked and retry.job.priority is JobPriority.BATCH  # the original's priority
        await _finish(conn, running[0].id)
        turns = await fair_db.dispatch_parked(conn, key_id, cap=CAP, lease_s=LEASE_S)
        assert turns == [fair_db.Dispatched(retry.job.id, JobPriority.BATCH)]


async def test_without_a_cap_nothing_is_parked(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        key_id = await _key(conn)
        jobs = [await _submit(conn, key_id, cap=0) for _ in range(5)]
        assert not any(j.parked for j in jobs)
