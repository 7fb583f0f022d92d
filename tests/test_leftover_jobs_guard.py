"""The guard every job-making test runs after it (`tests/conftest.py`): a bulk retry run the test
started ends before the guard looks for the test's jobs, so no retry it makes afterwards runs in a
later test (seen in a two-process run: a retry routed its question in the MCP stdio test)."""

from __future__ import annotations

import asyncio
import secrets

import asyncpg

from tests.conftest import until_retry_runs_end


async def test_a_retry_run_the_test_left_is_ended_before_its_jobs_are_looked_for(db: asyncpg.Pool) -> None:
    older, queued, running = (f"rr_{name}_{secrets.token_hex(4)}" for name in ("older", "queued", "running"))
    await db.execute("INSERT INTO job_retry_runs (id, status) VALUES ($1, 'queued')", older)
    since = await db.fetchval("SELECT clock_timestamp()")
    await db.execute("INSERT INTO job_retry_runs (id, status) VALUES ($1, 'queued'), ($2, 'running')", queued, running)

    async def the_worker_finishes() -> None:
        await asyncio.sleep(0.5)
        await db.execute("UPDATE job_retry_runs SET status = 'succeeded', finished_at = now() WHERE id = $1", running)

    worker = asyncio.create_task(the_worker_finishes())
    try:
        async with db.acquire() as conn:
            await until_retry_runs_end(conn, since)
            # The running one was waited for: it had ended when the wait returned. (Not `worker.done()`:
            # the task still hands its connection back after its update is seen, which on a loaded
            # machine takes longer than the wait's next poll.)
            assert await conn.fetchval("SELECT status FROM job_retry_runs WHERE id = $1", running) == "succeeded"
    finally:
        await worker
    rows = await db.fetch("SELECT id, status FROM job_retry_runs WHERE id = ANY($1)", [older, queued, running])
    # A queued one never starts; one from before the test is not the test's.
    assert {r["id"]: r["status"] for r in rows} == {older: "queued", queued: "cancelled", running: "succeeded"}
    await db.execute("DELETE FROM job_retry_runs WHERE id = $1", older)
