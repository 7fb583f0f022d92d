"""Maintenance queue: liveness ping (used by health checks and tests) and the sweeper."""

from __future__ import annotations

import logging
import os
import socket

from infra.db import jobs as jobs_db
from infra.db import webhooks as webhooks_db
from infra.settings import Settings
from infra.status import Queue
from infra.transient import REDIS_FAILED
from workers import registry
from workers._runtime import Runtime
from workers.app import process_app
from workers.base import run_async, turnout_task
from workers.dispatch import send_run_job, send_webhook
from workers.reembed import resume_reembed_runs
from workers.taskstats import queue_list_keys

log = logging.getLogger("turnout.sweeper")


@turnout_task(registry.PING, time_limit_s=10, ignore_result=False)
def ping() -> dict[str, object]:
    return {"pong": True, "host": socket.gethostname(), "pid": os.getpid()}


# --- the sweeper: Postgres is the truth, the broker may lose messages -------------------------

SWEEP_TIME_LIMIT_S = 60.0


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
        swept = await jobs_db.sweep_expired(conn, lease_s=settings.job_lease_s, max_attempts=settings.job_max_attempts)
        # A due delivery's own countdown message normally claims it within moments; one still
        # due after two sweeps lost its message (or its delay was too long for a message).
        overdue = await webhooks_db.take_overdue(conn, grace_s=2 * settings.job_sweep_interval_s + 5)
        # With messages waiting on the router queue (a backlog), an unclaimed job is most likely
        # one of them: sending it again would only grow the backlog; its lease still bounds it.
        undispatched = await jobs_db.sweep_undispatched(conn, grace_s=dispatch_grace_s(settings)) \
            if await _router_queue_empty(rt) else []
    for job_id in swept.requeued + undispatched:
        send_run_job(process_app(), settings, job_id)
    deliveries = [f.delivery_id for f in swept.failed if f.delivery_id is not None] + overdue
    for delivery_id in deliveries:
        send_webhook(process_app(), settings, delivery_id)
    # Re-embedding batches whose worker died are re-sent too (vector-worker start-up also resumes).
    reembed = await resume_reembed_runs(pool, settings=settings)
    if swept.requeued or undispatched or swept.failed or overdue or reembed:
        log.warning("sweeper: requeued %d job(s), re-sent %d lost job message(s), failed %d, re-sent %d webhook(s), "
                    "%d re-embedding message(s)",
                    len(swept.requeued), len(undispatched), len(swept.failed), len(overdue), reembed)
    return {"requeued": len(swept.requeued), "resent": len(undispatched), "failed": len(swept.failed),
            "webhooks": len(deliveries), "reembed": reembed}


async def _router_queue_empty(rt: Runtime) -> bool:
    try:
        pipe = (await rt.redis()).pipeline(transaction=False)
        for list_key in queue_list_keys(rt.settings, Queue.ROUTER.value):
            pipe.llen(list_key)
        return not any(await pipe.execute())
    except REDIS_FAILED as exc:  # no broker: nothing could be sent anyway
        log.warning("sweeper: router queue unreadable: %s", exc)
        return False
