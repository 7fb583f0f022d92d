"""Retention of finished jobs (TURNOUT_JOB_RETENTION_DAYS; the beat's `prune_jobs`, in the style of
Oban's Pruner): a job finished longer ago than the retention goes, with its events, audit rows,
webhook delivery and attempts, in one statement per small batch.

Only final jobs (`succeeded`, `failed`, `cancelled`) by `finished_at` (index `jobs_finished_at`):
a queued or running job is never touched, however old. A job whose webhook delivery is still
pending (being retried) waits for it to end. Rows another transaction holds are skipped (SKIP
LOCKED) and taken by a later batch. Its result pages live inside the job row and go with it (the
shared Redis page cache expires on its own TTL).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg


@dataclass(frozen=True)
class Pruned:
    jobs: int
    events: int
    audit: int
    deliveries: int

    def __add__(self, other: Pruned) -> Pruned:
        return Pruned(self.jobs + other.jobs, self.events + other.events, self.audit + other.audit,
                      self.deliveries + other.deliveries)

    def as_labels(self) -> dict[str, int]:
        return {"jobs": self.jobs, "events": self.events, "audit": self.audit, "deliveries": self.deliveries}


_PRUNE = """
    WITH doomed AS (
        SELECT id FROM jobs
        WHERE status IN ('succeeded', 'failed', 'cancelled')
          AND finished_at < now() - make_interval(days => $1)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.job_id = jobs.id AND d.status = 'pending')
        ORDER BY finished_at LIMIT $2
        FOR UPDATE SKIP LOCKED
    ), events AS (
        DELETE FROM job_events e USING doomed WHERE e.job_id = doomed.id RETURNING 1
    ), audit AS (
        DELETE FROM audit_events a USING doomed WHERE a.job_id = doomed.id RETURNING 1
    ), deliveries AS (
        DELETE FROM webhook_deliveries d USING doomed WHERE d.job_id = doomed.id RETURNING 1
    ), gone AS (
        DELETE FROM jobs j USING doomed WHERE j.id = doomed.id RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone) AS jobs, (SELECT count(*) FROM events) AS events,
           (SELECT count(*) FROM audit) AS audit, (SELECT count(*) FROM deliveries) AS deliveries
"""


async def prune_batch(conn: asyncpg.Connection, *, retention_days: int, batch: int) -> Pruned:
    """Remove up to `batch` finished jobs older than `retention_days` with what belongs to them."""
    row = await conn.fetchrow(_PRUNE, retention_days, batch)
    return Pruned(jobs=row["jobs"], events=row["events"], audit=row["audit"], deliveries=row["deliveries"])
