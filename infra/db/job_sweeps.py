"""The sweeps over the `jobs` table (run by the maintenance task, workers/tasks/maintenance.py):
jobs whose lease ran out go back to queued (or end), and queued jobs whose message was lost are
sent again."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from infra.db.job_events import add_event
from infra.db.jobs import LEASE_SQL, Finished, finalizing_sql, finished_from
from infra.status import JobStatus


@dataclass(frozen=True)
class SweepOutcome:
    requeued: list[str]  # send run_job for these
    failed: list[Finished]  # gave up (worker lost too often) or cancelled (asked to); send their webhooks


async def sweep_expired(
    conn: asyncpg.Connection, *, lease_s: float, max_attempts: int, limit: int = 200
) -> SweepOutcome:
    """Jobs whose lease ran out: a running job's worker died (or Redis lost the message) and a
    queued job's message was never picked up. Both go (back) to queued with a fresh lease; a
    job that already ran `max_attempts` times fails instead of crashing workers forever, and a
    running job whose cancel was requested ends cancelled instead of running again.
    The rows are locked FOR NO KEY UPDATE (what an UPDATE takes), not FOR UPDATE: a job's event
    writer holds the job's event lock (migration 0009) and then its foreign key's KEY SHARE lock on
    the row, which FOR UPDATE would block while this transaction waits for that event lock."""
    requeued: list[str] = []
    failed: list[Finished] = []
    async with conn.transaction():
        stale = await conn.fetch(
            """
            SELECT id, status, attempts, cancel_requested_at FROM jobs
            WHERE status IN ('queued', 'running') AND lease_expires_at < now()
            ORDER BY lease_expires_at LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED
            """,
            limit,
        )
        for job in stale:
            ended = await _sweep_one(conn, job, lease_s=lease_s, max_attempts=max_attempts)
            if ended is None:
                requeued.append(job["id"])
            else:
                failed.append(ended)
    return SweepOutcome(requeued, failed)


async def _sweep_one(conn: asyncpg.Connection, job: asyncpg.Record, *, lease_s: float, max_attempts: int
                     ) -> Finished | None:
    """One stale job of `sweep_expired`: ended (cancelled, or failed after `max_attempts`), or
    queued again (None)."""
    was_running = job["status"] == JobStatus.RUNNING.value
    if was_running and job["cancel_requested_at"] is not None:  # its client wants it stopped anyway
        row = await conn.fetchrow(
            finalizing_sql(
                """
                UPDATE jobs SET status = 'cancelled', lease_expires_at = NULL, finished_at = now(),
                                updated_at = now()
                WHERE id = $1 RETURNING *
                """,
                "$2",
            ),
            job["id"], {"reason": "cancel requested; its worker was lost"},
        )
        return finished_from(row)
    if was_running and job["attempts"] >= max_attempts:
        error = {
            "code": "worker_lost",
            "message": f"the worker running this job stopped {job['attempts']} times; giving up",
        }
        row = await conn.fetchrow(
            finalizing_sql(
                """
                UPDATE jobs SET status = 'failed', error = $2, lease_expires_at = NULL,
                                finished_at = now(), updated_at = now()
                WHERE id = $1 RETURNING *
                """,
                "$3",
            ),
            job["id"], error, {"error": error},
        )
        return finished_from(row)
    await conn.execute(
        f"UPDATE jobs SET status = 'queued', lease_expires_at = {LEASE_SQL}, updated_at = now(), "  # noqa: S608
        "dispatched_at = now() WHERE id = $1",
        job["id"], lease_s,
    )
    reason = "worker lost (lease expired)" if was_running else "not picked up within the lease"
    await add_event(conn, job["id"], "requeued", {"reason": reason, "attempt": job["attempts"]})
    return None


async def sweep_undispatched(conn: asyncpg.Connection, *, grace_s: float, limit: int = 200) -> list[str]:
    """Queued jobs whose message was due more than `grace_s` ago and is still unclaimed: lost (the
    broker dropped it, or a runner failed before its claim). Their dispatch time is set to now, so
    each is sent again once per grace period, not on every sweep; the caller sends them."""
    rows = await conn.fetch(
        """
        WITH due AS (
            SELECT id FROM jobs
            WHERE status = 'queued' AND dispatched_at < now() - make_interval(secs => $1)
            ORDER BY dispatched_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED
        ), resent AS (
            UPDATE jobs SET dispatched_at = now() FROM due WHERE jobs.id = due.id RETURNING jobs.id, jobs.attempts
        ), requeued AS (
            INSERT INTO job_events (job_id, kind, data)
            SELECT id, 'requeued', jsonb_build_object('reason', 'message lost (not claimed in time)',
                                                      'attempt', attempts) FROM resent
        )
        SELECT id FROM resent
        """,
        grace_s, limit,
    )
    return [r["id"] for r in rows]
