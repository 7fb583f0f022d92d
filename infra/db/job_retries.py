"""Retries of a job (`POST /v1/jobs/{id}/retry`, bulk retry runs): a new job with the original's
question and options, linked both ways (`retry_of` on the retry, `retries` on the original).

One statement creates the retry, its `queued` event and the original's link. The original is
locked for it (`FOR UPDATE`), and `jobs_one_retry` (migration 0011) allows one unforced retry per
original, so concurrent retries of one job make one job; `force` makes another each time. The
original keeps its status, result and `updated_at`; only its `retries` list grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import asyncpg

from infra.db.jobs import JobRow, get_job, job_row, new_job_id

RetryOutcome = Literal["created", "existing", "not_found", "not_final"]


@dataclass(frozen=True)
class Retry:
    outcome: RetryOutcome
    job: JobRow | None  # the retry (created or existing); None when not_found / not_final
    original: JobRow | None


_CREATE = """
    WITH original AS (
        SELECT * FROM jobs
        WHERE id = $1 AND ($2::text IS NULL OR api_key_id = $2) AND status IN ('succeeded', 'failed', 'cancelled')
        FOR NO KEY UPDATE
    ), slot AS (  -- the key's cap of jobs in flight, as at submission (infra/db/jobs.py create_job)
        SELECT CASE WHEN $6::int = 0 THEN true ELSE jobs_in_flight(api_key_id) < $6 END AS free FROM original
    ), job AS (
        INSERT INTO jobs (id, api_key_id, question, answer_language, page_size, webhook_url, request_hash,
                          lease_expires_at, source, client, tool_call, language, retry_of, retry_forced,
                          previous_job_id, conversation_id, priority, dispatched_at)
        SELECT $3, api_key_id, question, answer_language, page_size, webhook_url, request_hash,
               CASE WHEN free THEN now() + make_interval(secs => $4) END, source, client, tool_call, language, id, $5,
               previous_job_id, conversation_id, priority, CASE WHEN free THEN now() END
        FROM original, slot
        ON CONFLICT (retry_of) WHERE retry_of IS NOT NULL AND NOT retry_forced DO NOTHING
        RETURNING *
    ), linked AS (
        UPDATE jobs SET retries = jobs.retries || job.id FROM job WHERE jobs.id = job.retry_of
    ), queued AS (
        INSERT INTO job_events (job_id, kind, data)
        SELECT id, 'queued', jsonb_build_object('retryOf', retry_of)
                             || CASE WHEN dispatched_at IS NULL THEN '{"parked": true}'::jsonb ELSE '{}'::jsonb END
        FROM job
    )
    SELECT * FROM job
"""


async def retry_job(
    conn: asyncpg.Connection, job_id: str, *, api_key_id: str | None, force: bool, lease_s: float,
    in_flight_cap: int = 0,
) -> Retry:
    """Retry a finished job (with `api_key_id`, only that key's). Without `force`, a job already
    retried (unforced) answers its existing retry (`existing`), nothing new is queued. A retry is
    parked like a submission when its key has `in_flight_cap` jobs in flight (`job.parked`)."""
    for _ in range(2):  # a second pass only if the unforced retry vanished (retention) in between
        row = await conn.fetchrow(_CREATE, job_id, api_key_id, new_job_id(), lease_s, force, in_flight_cap)
        if row is not None:
            return Retry("created", job_row(row), None)
        original = await get_job(conn, job_id, api_key_id=api_key_id)
        if original is None:
            return Retry("not_found", None, None)
        if not original.status.is_final:
            return Retry("not_final", None, original)
        existing = await conn.fetchrow("SELECT * FROM jobs WHERE retry_of = $1 AND NOT retry_forced", job_id)
        if existing is not None:
            return Retry("existing", job_row(existing), original)
    return Retry("not_found", None, None)
