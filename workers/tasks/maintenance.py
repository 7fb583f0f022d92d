"""Maintenance queue: liveness ping (used by health checks and tests) and the sweeper."""

from __future__ import annotations

import logging
import os
import socket

from infra.db import budgets as budgets_db
from infra.db import fair_shares as fair_db
from infra.db import job_retry_runs as retry_runs_db
from infra.db import job_sweeps
from infra.db import webhooks as webhooks_db
from infra.settings import Settings
from infra.status import JobPriority, Queue
from infra.transient import REDIS_FAILED
from workers import registry
from workers._runtime import Runtime
from workers.app import process_app
from workers.base import run_async, turnout_task
from workers.dispatch import send_run_job, send_webhook
from workers.fair_shares import send_turns, take_turns
from workers.job_retries import send_retry_batch
from workers.reembed import resume_reembed_runs
from workers.taskstats import queue_list_keys

log = logging.getLogger("turnout.sweeper")


@turnout_task(registry.PING, time_limit_s=10, ignore_result=False)
def ping() -> dict[str, object]:
    return {"pong": True, "host": socket.gethostname(), "pid": os.getpid()}


# --- the sweeper: Postgres is the truth, the broker may lose messages -------------------------

SWEEP_TIME_LIMIT_S = 60.0
RETRY_RUN_IDLE_S = 300.0  # a bulk retry batch (50 retries) takes seconds; this long without progress = lost


def dispatch_grace_s(settings: Settings) -> float:
    """How long a queued job's message may go unclaimed before it counts as lost: two sweeps (and
    a little), so a message is sent again 2-3 sweep intervals after it was due (docs/embedded.md)."""
    return 2 * settings.job_sweep_interval_s + 5


@turnout_task(registry.SWEEP, time_limit_s=SWEEP_TIME_LIMIT_S, ignore_result=False)
def sweep() -> dict[str, int]:
    """Re-enqueue jobs stuck past their lease, webhook deliveries and re-embedding batches whose message was lost."""
    return run_async(sweep_once, timeout_s=SWEEP_TIME_LIMIT_S)


async def sweep_once(rt: Runtime) -> dict[str, int]:
    settings = rt.settings
    pool = await rt.pool()
    async with pool.acquire() as conn:
        swept = await job_sweeps.sweep_expired(conn, lease_s=settings.job_lease_s, max_attempts=settings.job_max_attempts)
        # A due delivery's own countdown message normally claims it within moments; one still
        # due after two sweeps lost its message (or its delay was too long for a message).
        overdue = await webhooks_db.take_overdue(conn, grace_s=2 * settings.job_sweep_interval_s + 5)
        # With messages waiting on the router queue (a backlog), an unclaimed job is most likely
        # one of them: sending it again would only grow the backlog; its lease still bounds it.
        undispatched = await job_sweeps.sweep_undispatched(conn, grace_s=dispatch_grace_s(settings)) \
            if await _router_queue_empty(rt) else []
        stalled_retry_runs = await retry_runs_db.stalled_runs(conn, idle_s=RETRY_RUN_IDLE_S)
        # Budget holds of LLM calls that never settled (a worker died mid-call): given back.
        released_holds = await budgets_db.release_stale(conn)
        batch = await fair_db.batch_jobs(conn, swept.requeued + undispatched)
        parked_keys = await fair_db.keys_with_parked(conn) if settings.jobs_per_key_in_flight else []
    for run_id in stalled_retry_runs:  # a bulk retry run whose batch message was lost
        send_retry_batch(settings, run_id)
    for job_id in swept.requeued + undispatched:
        priority = JobPriority.BATCH if job_id in batch else JobPriority.INTERACTIVE
        send_run_job(process_app(), settings, job_id, priority=priority)
    # Fair shares: the slots of the jobs given up here, and any a runner that died did not hand on.
    turns = await take_turns(pool, settings, [*(f.job.api_key_id for f in swept.failed), *parked_keys])
    send_turns(process_app(), settings, turns)
    deliveries = [f.delivery_id for f in swept.failed if f.delivery_id is not None] + overdue
    for delivery_id in deliveries:
        send_webhook(process_app(), settings, delivery_id)
    # Re-embedding batches whose worker died are re-sent too (vector-worker start-up also resumes).
    reembed = await resume_reembed_runs(pool, settings=settings)
    if released_holds:
        log.warning("sweeper: released %d budget hold(s) of LLM calls that never settled", released_holds)
    if swept.requeued or undispatched or swept.failed or overdue or reembed:
        log.warning("sweeper: requeued %d job(s), re-sent %d lost job message(s), failed %d, re-sent %d webhook(s), "
                    "%d re-embedding message(s)",
                    len(swept.requeued), len(undispatched), len(swept.failed), len(overdue), reembed)
    return {"requeued": len(swept.requeued), "resent": len(undispatched), "failed": len(swept.failed),
            "webhooks": len(deliveries), "reembed": reembed, "budgetHolds": released_holds,
            "dispatched": len(turns)}


async def _router_queue_empty(rt: Runtime) -> bool:
    try:
        pipe = (await rt.redis()).pipeline(transaction=False)
        for list_key in queue_list_keys(rt.settings, Queue.ROUTER.value):
            pipe.llen(list_key)
        return not any(await pipe.execute())
    except REDIS_FAILED as exc:  # no broker: nothing could be sent anyway
        log.warning("sweeper: router queue unreadable: %s", exc)
        return False
