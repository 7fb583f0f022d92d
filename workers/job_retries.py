"""Bulk retry runs from the sending side: start a run (count what matches, store it, send its
first batch message) and send a run's next batch. Safe to call from any process: it only writes
the run row and sends messages (the maintenance worker runs the batches, workers/tasks/job_upkeep.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import UTC, datetime

import asyncpg

from infra.db import job_retry_runs as runs_db
from infra.db.job_list import JobFilter, count_jobs
from infra.settings import Settings
from workers.app import app_for
from workers.registry import RETRY_BATCH

log = logging.getLogger("turnout.retry_runs")


def send_retry_batch(settings: Settings, run_id: str) -> bool:
    try:
        app_for(settings).send_task(RETRY_BATCH.name, args=[run_id], queue=RETRY_BATCH.queue.value)
    except Exception as exc:  # the broker's errors vary by transport; the sweeper resumes stalled runs
        log.warning("could not send retry run %s (the sweeper will): %s", run_id, exc)
        return False
    return True


async def start_retry_run(
    pool: asyncpg.Pool, settings: Settings, *, admin_key_id: str, filters: JobFilter, force: bool
) -> runs_db.RetryRun:
    """The jobs matching `filters` when the run starts (a run never retries its own retries: they
    are newer than its bound) are counted, stored with the run and retried batch by batch."""
    now = datetime.now(UTC)
    bound = filters.created_before if filters.created_before is not None and filters.created_before < now else now
    filters = dataclasses.replace(filters, created_before=bound)
    async with pool.acquire() as conn:
        total = await count_jobs(conn, filters)
        run = await runs_db.create_run(conn, api_key_id=admin_key_id, filters=filters.wire(), force=force, total=total)
    await asyncio.to_thread(send_retry_batch, settings, run.id)
    return run
