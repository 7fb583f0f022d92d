"""Fair shares per key (issue 27): dispatching a key's parked jobs as its jobs in flight end.

A key has at most TURNOUT_JOBS_PER_KEY_IN_FLIGHT jobs *in flight*: queued with a `run_job` message
sent (`dispatched_at` set) or running. A job submitted over that is stored `queued` but *parked*
(`dispatched_at IS NULL`, no lease, no message: `create_job`, `retry_job`). When one of the key's
jobs ends, `dispatch_parked` gives its next parked jobs (interactive first, then oldest first) a
dispatch time and a lease, and the caller sends their messages; from then on each is an ordinary
queued job (the lease sweep and the lost-message sweep cover it, the claim fences it). A parked
job is never claimed (`claim_job` requires a dispatch time) and never swept (it has no lease and no
dispatch time), so it cannot run before its turn nor twice; the sweeper calls `dispatch_parked`
for every key with parked jobs, so a dispatch missed by a runner that died is made later.

The count and the dispatch are one statement under the key's advisory lock (`jobs_in_flight`,
migration 0013), so concurrent dispatches and submissions of one key never pass the cap.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from infra.status import JobPriority


@dataclass(frozen=True)
class Dispatched:
    """A parked job given its turn: send its `run_job` message (at its priority)."""

    id: str
    priority: JobPriority


async def dispatch_parked(conn: asyncpg.Connection, api_key_id: str, *, cap: int, lease_s: float) -> list[Dispatched]:
    """The key's next parked jobs, as many as its free slots, made dispatched (with a `dispatched`
    event); the caller sends their messages. A concurrent cancel's row is skipped (SKIP LOCKED)."""
    rows = await conn.fetch(
        """
        WITH free AS (
            SELECT greatest($2::int - jobs_in_flight($1), 0) AS slots
        ), next AS (
            SELECT id FROM jobs
            WHERE api_key_id = $1 AND status = 'queued' AND dispatched_at IS NULL
            ORDER BY (priority = 'batch'), created_at, id
            LIMIT (SELECT slots FROM free)
            FOR NO KEY UPDATE SKIP LOCKED
        ), dispatched AS (
            UPDATE jobs SET dispatched_at = now(), lease_expires_at = now() + make_interval(secs => $3),
                            updated_at = now()
            FROM next WHERE jobs.id = next.id
            RETURNING jobs.id, jobs.priority
        ), events AS (
            INSERT INTO job_events (job_id, kind, data)
            SELECT id, 'dispatched', jsonb_build_object('reason', 'its key has a free slot') FROM dispatched
        )
        SELECT id, priority FROM dispatched ORDER BY id
        """,
        api_key_id, cap, lease_s,
    )
    return [Dispatched(r["id"], JobPriority(r["priority"])) for r in rows]


async def keys_with_parked(conn: asyncpg.Connection, *, limit: int = 100) -> list[str]:
    """Keys that have parked jobs (for the sweeper's catch-up dispatch)."""
    rows = await conn.fetch(
        "SELECT DISTINCT api_key_id FROM jobs WHERE status = 'queued' AND dispatched_at IS NULL "
        "AND api_key_id IS NOT NULL LIMIT $1",
        limit,
    )
    return [r["api_key_id"] for r in rows]


async def in_flight(conn: asyncpg.Connection, api_key_id: str) -> tuple[int, int]:
    """(jobs in flight, jobs parked) of a key; for tests and the operations view."""
    row = await conn.fetchrow(
        """
        SELECT count(*) FILTER (WHERE dispatched_at IS NOT NULL) AS flying,
               count(*) FILTER (WHERE status = 'queued' AND dispatched_at IS NULL) AS parked
        FROM jobs WHERE api_key_id = $1 AND status IN ('queued', 'running')
        """,
        api_key_id,
    )
    return int(row["flying"]), int(row["parked"])


async def batch_jobs(conn: asyncpg.Connection, job_ids: list[str]) -> set[str]:
    """Which of these jobs are batch work (the sweeper re-sends their messages at batch priority)."""
    if not job_ids:
        return set()
    rows = await conn.fetch("SELECT id FROM jobs WHERE id = ANY($1::text[]) AND priority = 'batch'", job_ids)
    return {r["id"] for r in rows}
