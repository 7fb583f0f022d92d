"""Cancelling a job (issue 27): the statements on `jobs` that a cancel takes.

A queued job is cancelled at once (`jobs.cancel_job`). A running job gets `cancel_requested_at`
(the request is the row, not a Celery revoke): its runner polls it (workers/cancel.py), stops at
its next safe point and ends the job with `cancel_running`, fenced by its attempt like every final
write, so a cancel racing the job's own end leaves exactly one final state, event and webhook.
"""

from __future__ import annotations

from typing import Any, Literal

import asyncpg

from infra.db.jobs import (
    CancelOutcome,
    Finished,
    JobRow,
    cancel_job,
    finalizing_sql,
    finished_from,
    get_job,
    job_row,
)
from infra.db.journal import Narration
from infra.status import JobStatus

RequestOutcome = Literal["cancelled", "requested", "not_found"] | JobStatus
_TRIES = 3  # a job moving between queued and running (a retry) while the request is recorded


async def request_cancel(
    conn: asyncpg.Connection, job_id: str, *, api_key_id: str
) -> tuple[RequestOutcome, Finished | None, JobRow | None]:
    """Cancel a queued job now ("cancelled", its final state) or record the request for a running
    one ("requested", the job row). Otherwise "not_found" or the job's final status."""
    outcome: CancelOutcome = "not_found"
    for _ in range(_TRIES):
        outcome, finished = await cancel_job(conn, job_id, api_key_id=api_key_id)
        if outcome == "cancelled" or outcome == "not_found":
            return outcome, finished, None
        if outcome != JobStatus.RUNNING:
            return outcome, None, None
        row = await conn.fetchrow(
            """
            UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
            WHERE id = $1 AND api_key_id = $2 AND status = 'running'
            RETURNING *
            """,
            job_id, api_key_id,
        )
        if row is not None:
            return "requested", None, job_row(row)
        # it left `running` meanwhile: back to queued (a retry: cancel it now) or final
    return outcome, None, await get_job(conn, job_id, api_key_id=api_key_id)


async def cancel_requested(conn: asyncpg.Connection, job_id: str) -> bool:
    """Has a cancel been asked for this job? (The runner's poll: one index lookup.)"""
    return bool(await conn.fetchval("SELECT cancel_requested_at IS NOT NULL FROM jobs WHERE id = $1", job_id))


async def cancel_running(
    conn: asyncpg.Connection, job_id: str, *, attempt: int, usage: dict[str, Any], narration: Narration | None = None
) -> Finished | None:
    """running -> cancelled, for the runner holding `attempt`, with what the job had used; its
    final event and webhook delivery in the same statement. None when it lost the job."""
    extra = narration.parameters() if narration else []
    row = await conn.fetchrow(
        finalizing_sql(
            """
            UPDATE jobs SET status = 'cancelled', usage = $3, lease_expires_at = NULL,
                            finished_at = now(), updated_at = now()
            WHERE id = $1 AND status = 'running' AND attempts = $2 AND cancel_requested_at IS NOT NULL
            RETURNING *
            """,
            "$4",
            5 if extra else None,
        ),
        job_id, attempt, usage, {"usage": usage}, *extra,
    )
    return finished_from(row) if row is not None else None
