"""Maintenance queue: job retention (`prune_jobs`, from beat) and bulk retry batches (`retry_batch`)."""

from __future__ import annotations

import logging

from infra import counters
from infra.db import job_retry_runs as runs_db
from infra.db.job_list import JobFilter, list_jobs
from infra.db.job_retries import retry_job
from infra.db.jobs import JobRow
from infra.db.retention import Pruned, prune_batch
from workers import registry
from workers._runtime import Runtime
from workers.app import process_app
from workers.base import run_async, turnout_task
from workers.dispatch import send_run_job
from workers.job_retries import send_retry_batch

log = logging.getLogger("turnout.upkeep")

PRUNE_TIME_LIMIT_S = 120.0
PRUNE_MAX_BATCHES = 40  # per tick: a long backlog is worked off over several ticks, not in one long task
RETRY_BATCH_SIZE = 50
RETRY_TIME_LIMIT_S = 120.0


@turnout_task(registry.PRUNE_JOBS, time_limit_s=PRUNE_TIME_LIMIT_S, ignore_result=False)
def prune_jobs() -> dict[str, int]:
    """Remove finished jobs past TURNOUT_JOB_RETENTION_DAYS (infra/db/retention.py)."""
    return run_async(prune_once, timeout_s=PRUNE_TIME_LIMIT_S)


async def prune_once(rt: Runtime) -> dict[str, int]:
    settings = rt.settings
    total = Pruned(0, 0, 0, 0)
    if settings.job_retention_days == 0:
        return total.as_labels()
    pool = await rt.pool()
    for _ in range(PRUNE_MAX_BATCHES):
        async with pool.acquire() as conn:  # one statement per batch: its own short transaction
            pruned = await prune_batch(conn, retention_days=settings.job_retention_days,
                                       batch=settings.job_retention_batch)
        for what, n in pruned.as_labels().items():
            if n:
                counters.bump(counters.JOBS_PRUNED, n, what=what)  # flushed by the worker heartbeat
        total += pruned
        if pruned.jobs < settings.job_retention_batch:
            break
    if total.jobs:
        log.info("retention: pruned %d job(s), %d event(s), %d audit row(s), %d webhook deliveries",
                 total.jobs, total.events, total.audit, total.deliveries)
    return total.as_labels()


@turnout_task(registry.RETRY_BATCH, time_limit_s=RETRY_TIME_LIMIT_S, ignore_result=False)
def retry_batch(run_id: str) -> str:
    """One batch of a bulk retry run; sends the next batch's message until the run is done."""
    return run_async(lambda rt: retry_batch_once(rt, run_id), timeout_s=RETRY_TIME_LIMIT_S)


async def retry_batch_once(rt: Runtime, run_id: str) -> str:
    settings = rt.settings
    pool = await rt.pool()
    async with pool.acquire() as conn:
        run = await runs_db.start_run(conn, run_id)
        if run is None:
            return "ended"
        listed = await list_jobs(conn, JobFilter.from_wire(run.filters), limit=RETRY_BATCH_SIZE, after=run.position)
    jobs = [each.job for each in listed]
    queued: list[JobRow] = []
    done = skipped = 0
    for job in jobs:
        if not job.status.is_final:
            skipped += 1
            continue
        async with pool.acquire() as conn:
            retry = await retry_job(conn, job.id, api_key_id=None, force=run.force, lease_s=settings.job_lease_s,
                                    in_flight_cap=settings.jobs_per_key_in_flight)
        done += 1
        if retry.outcome == "created" and retry.job is not None and not retry.job.parked:
            queued.append(retry.job)
    for queued_job in queued:  # after their rows are committed; a failed send is the sweeper's
        send_run_job(process_app(), settings, queued_job.id, priority=queued_job.priority)
    finished = len(jobs) < RETRY_BATCH_SIZE
    position = (jobs[-1].created_at, jobs[-1].id) if jobs else None
    async with pool.acquire() as conn:
        recorded = await runs_db.record_batch(conn, run_id, done=done, skipped=skipped, position=position,
                                              finished=finished, started_from=run.position)
    if recorded and not finished:
        send_retry_batch(settings, run_id)
    return "duplicate" if not recorded else "finished" if finished else "continued"
