"""The job state machine in SQL (infra/db/jobs.py): why running a job twice still gives one
result and one webhook delivery. Runs in a database of its own so no sweeper of another
stack touches these deliberately stale jobs."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from infra.db import job_sweeps
from infra.db import jobs as jobs_db
from infra.db import webhooks as webhooks_db
from infra.db.api_keys import create_key
from infra.db.audit import AuditEvent, list_audit_events
from infra.db.journal import Narration
from infra.results import QuestionResult
from infra.status import JobStatus, ResultStatus, ResultType
from workers.journal import Journal

LEASE_S = 60.0
_RESULT = QuestionResult(result_type=ResultType.ANSWER, status=ResultStatus.ANSWERED, answer="one")
_SECOND = QuestionResult(result_type=ResultType.ANSWER, status=ResultStatus.ANSWERED, answer="two")


@pytest.fixture
def pool(module_pool: asyncpg.Pool) -> asyncpg.Pool:
    return module_pool  # the module's own database (tests/workers/conftest.py)


async def _new_job(conn: asyncpg.Connection, *, webhook: str | None = "https://hooks.example.com/x",
                   idempotency_key: str | None = None, key_id: str | None = None) -> jobs_db.JobRow:
    if key_id is None:
        key_id = (await create_key(conn, "state")).key.id
    job, created = await jobs_db.create_job(
        conn, api_key_id=key_id, question="q", answer_language=None, page_size=None, webhook_url=webhook,
        idempotency_key=idempotency_key, request_hash="h", lease_s=LEASE_S,
    )
    assert created
    return job


async def _expire_lease(conn: asyncpg.Connection, job_id: str) -> None:
    await conn.execute("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", job_id)


async def _kinds(conn: asyncpg.Connection, job_id: str) -> list[str]:
    return [r["kind"] for r in await conn.fetch("SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id", job_id)]


async def test_a_duplicate_message_is_a_no_op(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _new_job(conn)
        claimed = await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
        assert claimed is not None and claimed.status is JobStatus.RUNNING and claimed.attempts == 1
        assert await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S) is None  # second delivery of the message
        finished = await jobs_db.finish_job(conn, job.id, attempt=1, status=JobStatus.SUCCEEDED,
                                            result=_RESULT, error=None, usage={"llmCalls": 1})
        assert finished is not None and finished.delivery_id is not None
        assert finished.job == await jobs_db.get_job(conn, job.id)  # as stored, the result not read back
        assert await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S) is None  # already final
        again = await jobs_db.finish_job(conn, job.id, attempt=1, status=JobStatus.FAILED, result=None,
                                         error={"code": "x", "message": "y"}, usage={})
        assert again is None
        row = await jobs_db.get_job(conn, job.id)
        assert row is not None and row.status is JobStatus.SUCCEEDED and row.result == _RESULT
        assert await _kinds(conn, job.id) == ["queued", "running", "succeeded"]
        assert await conn.fetchval("SELECT count(*) FROM webhook_deliveries WHERE job_id = $1", job.id) == 1


async def test_a_lost_worker_is_fenced_off_after_the_sweep(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _new_job(conn)
        assert await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S) is not None
        await _expire_lease(conn, job.id)  # the worker died (or froze) past its lease
        swept = await job_sweeps.sweep_expired(conn, lease_s=LEASE_S, max_attempts=3)
        assert job.id in swept.requeued and swept.failed == []
        assert (await jobs_db.get_job(conn, job.id)).status is JobStatus.QUEUED  # type: ignore[union-attr]
        second = await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
        assert second is not None and second.attempts == 2
        # The first runner wakes up: it can neither renew nor finish.
        assert not await jobs_db.renew_lease(conn, job.id, attempt=1, lease_s=LEASE_S)
        assert await jobs_db.finish_job(conn, job.id, attempt=1, status=JobStatus.SUCCEEDED, result=_RESULT,
                                        error=None, usage={}) is None
        assert await jobs_db.renew_lease(conn, job.id, attempt=2, lease_s=LEASE_S)
        done = await jobs_db.finish_job(conn, job.id, attempt=2, status=JobStatus.SUCCEEDED, result=_SECOND,
                                        error=None, usage={})
        assert done is not None and done.job.result == _SECOND
        assert await _kinds(conn, job.id) == ["queued", "running", "requeued", "running", "succeeded"]
        assert await conn.fetchval("SELECT count(*) FROM webhook_deliveries WHERE job_id = $1", job.id) == 1


async def test_the_final_statement_writes_the_rest_of_the_journal_before_the_final_event(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job, lost = await _new_job(conn), await _new_job(conn)
        for j in (job, lost):
            assert await jobs_db.claim_job(conn, j.id, lease_s=LEASE_S) is not None

    async def rest_of(job_id: str, step: str) -> Narration:
        journal = Journal(pool)
        journal.event(job_id, "tool_started", {"step": step})
        journal.audit(AuditEvent("tool_execution", job_id=job_id, tool="SearchArticles", outcome=step))
        journal.event(job_id, "tool_finished", {"step": step})
        return await journal.take_rest()  # taken before the writer started: nothing written yet

    async with pool.acquire() as conn:
        narration = await rest_of(job.id, "mine")
        assert len(narration.rows) == 3 and await _kinds(conn, job.id) == ["queued", "running"]
        done = await jobs_db.finish_job(conn, job.id, attempt=1, status=JobStatus.SUCCEEDED, result=_RESULT,
                                        error=None, usage={}, narration=narration)
        assert done is not None and done.delivery_id is not None
        assert await _kinds(conn, job.id) == ["queued", "running", "tool_started", "tool_finished", "succeeded"]
        assert [(a.kind, a.outcome) for a in await list_audit_events(conn, job.id)] == [("tool_execution", "mine")]

        # A runner that lost its job leaves its narration, not a final state.
        stale = await jobs_db.finish_job(conn, lost.id, attempt=7, status=JobStatus.SUCCEEDED, result=_SECOND,
                                         error=None, usage={}, narration=await rest_of(lost.id, "stale"))
        assert stale is None
        assert await _kinds(conn, lost.id) == ["queued", "running", "tool_started", "tool_finished"]
        assert (await jobs_db.get_job(conn, lost.id)).status is JobStatus.RUNNING  # type: ignore[union-attr]
        assert await conn.fetchval("SELECT count(*) FROM webhook_deliveries WHERE job_id = $1", lost.id) == 0


async def test_the_sweeper_leaves_live_leases_alone_and_resends_lost_queued_jobs(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        running = await _new_job(conn)
        await jobs_db.claim_job(conn, running.id, lease_s=LEASE_S)
        waiting = await _new_job(conn)
        lost = await _new_job(conn)
        await _expire_lease(conn, lost.id)  # queued, but its message never arrived
        swept = await job_sweeps.sweep_expired(conn, lease_s=LEASE_S, max_attempts=3)
        assert lost.id in swept.requeued
        assert running.id not in swept.requeued and waiting.id not in swept.requeued
        assert (await _kinds(conn, lost.id))[-1] == "requeued"
        # Requeued with a fresh lease: the next sweep does not send it again.
        assert lost.id not in (await job_sweeps.sweep_expired(conn, lease_s=LEASE_S, max_attempts=3)).requeued


async def test_a_job_that_keeps_killing_workers_fails_with_one_webhook(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _new_job(conn)
        for attempt in (1, 2):
            assert (await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)).attempts == attempt  # type: ignore[union-attr]
            await _expire_lease(conn, job.id)
            assert job.id in (await job_sweeps.sweep_expired(conn, lease_s=LEASE_S, max_attempts=3)).requeued
        await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)  # the third and last run is lost too
        await _expire_lease(conn, job.id)
        swept = await job_sweeps.sweep_expired(conn, lease_s=LEASE_S, max_attempts=3)
        [failed] = [f for f in swept.failed if f.job.id == job.id]
        assert failed.job.status is JobStatus.FAILED and failed.job.error["code"] == "worker_lost"  # type: ignore[index]
        assert failed.delivery_id is not None
        assert (await _kinds(conn, job.id))[-1] == "failed"


async def test_release_after_a_transient_error_then_run_again(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _new_job(conn, webhook=None)
        await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
        assert await jobs_db.release_job(conn, job.id, attempt=1, retry_in_s=30, reason="redis down")
        assert not await jobs_db.release_job(conn, job.id, attempt=1, retry_in_s=30, reason="twice")
        again = await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
        assert again is not None and again.attempts == 2
        finished = await jobs_db.finish_job(conn, job.id, attempt=2, status=JobStatus.FAILED, result=None,
                                            error={"code": "limit_tokens", "message": "m"}, usage={})
        assert finished is not None and finished.delivery_id is None  # no webhook URL, no delivery
        assert await _kinds(conn, job.id) == ["queued", "running", "requeued", "running", "failed"]


async def test_a_queued_job_unclaimed_past_the_grace_is_sent_again_once_per_grace(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _new_job(conn, webhook=None)
        assert job.id not in await job_sweeps.sweep_undispatched(conn, grace_s=30)  # its message is fresh
        await conn.execute("UPDATE jobs SET dispatched_at = now() - interval '31 seconds' WHERE id = $1", job.id)
        assert job.id in await job_sweeps.sweep_undispatched(conn, grace_s=30)
        assert job.id not in await job_sweeps.sweep_undispatched(conn, grace_s=30)  # sent now: not again at once
        claimed = await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
        assert claimed is not None and claimed.attempts == 1  # the re-sent message claims it as usual
        await conn.execute("UPDATE jobs SET dispatched_at = now() - interval '1 hour' WHERE id = $1", job.id)
        assert job.id not in await job_sweeps.sweep_undispatched(conn, grace_s=30)  # running: not the sweep's
        assert await jobs_db.release_job(conn, job.id, attempt=1, retry_in_s=90, reason="r", message_in_s=60)
        assert job.id not in await job_sweeps.sweep_undispatched(conn, grace_s=30)  # its retry is due in 60 s
        assert await _kinds(conn, job.id) == ["queued", "requeued", "running", "requeued"]


async def test_cancel_only_while_queued(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _new_job(conn)
        key_id = job.api_key_id
        assert key_id is not None
        await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
        outcome, finished = await jobs_db.cancel_job(conn, job.id, api_key_id=key_id)
        assert outcome is JobStatus.RUNNING and finished is None
        assert await jobs_db.cancel_job(conn, job.id, api_key_id="tk_someoneelse") == ("not_found", None)
        queued = await _new_job(conn, key_id=key_id)
        outcome, finished = await jobs_db.cancel_job(conn, queued.id, api_key_id=key_id)
        assert outcome == "cancelled" and finished is not None and finished.delivery_id is not None
        assert await jobs_db.claim_job(conn, queued.id, lease_s=LEASE_S) is None  # its message arrives later


async def test_concurrent_submissions_with_one_idempotency_key_make_one_job(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        key_id = (await create_key(conn, "race")).key.id

    async def submit() -> tuple[jobs_db.JobRow, bool]:
        async with pool.acquire() as conn:
            return await jobs_db.create_job(
                conn, api_key_id=key_id, question="same", answer_language=None, page_size=None, webhook_url=None,
                idempotency_key="race-1", request_hash="h", lease_s=LEASE_S,
            )

    results = await asyncio.gather(*(submit() for _ in range(4)))
    assert len({job.id for job, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, False, False, True]


async def test_a_delivery_attempt_is_claimed_once(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        job = await _new_job(conn)
        await jobs_db.claim_job(conn, job.id, lease_s=LEASE_S)
        finished = await jobs_db.finish_job(conn, job.id, attempt=1, status=JobStatus.SUCCEEDED, result=_RESULT,
                                            error=None, usage={})
        assert finished is not None and finished.delivery_id is not None
        delivery_id = finished.delivery_id
        first = await webhooks_db.claim_delivery(conn, delivery_id, hold_s=30)
        assert first is not None and first.attempts == 1
        assert await webhooks_db.claim_delivery(conn, delivery_id, hold_s=30) is None  # a duplicate message
        await webhooks_db.finish_attempt(conn, delivery_id, attempt=1, outcome="retry", status_code=503,
                                         error="HTTP 503", latency_ms=3.0, retry_in_s=3600)
        assert await webhooks_db.claim_delivery(conn, delivery_id, hold_s=30) is None  # not due for an hour
        await conn.execute("UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 hour' WHERE id = $1",
                           delivery_id)
        assert await webhooks_db.take_overdue(conn, grace_s=60) == [delivery_id]  # its message was lost
        second = await webhooks_db.claim_delivery(conn, delivery_id, hold_s=30)
        assert second is not None and second.attempts == 2
        await webhooks_db.finish_attempt(conn, delivery_id, attempt=2, outcome="delivered", status_code=204,
                                         error=None, latency_ms=2.0)
        assert await webhooks_db.claim_delivery(conn, delivery_id, hold_s=30) is None
        attempts = await webhooks_db.list_attempts(conn, delivery_id)
        assert [(a.attempt, a.status_code) for a in attempts] == [(1, 503), (2, 204)]
        stored = await webhooks_db.get_delivery(conn, delivery_id, api_key_id=job.api_key_id)
        assert stored is not None and stored.status == "delivered" and stored.delivered_at is not None
