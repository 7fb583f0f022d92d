"""Sending job-API messages by task name; `create_producer` makes what sends them.

Sends are best effort by design: Postgres holds the job and the delivery, and the sweeper
sends the message again if this one is lost (broker down, Redis restarted).
"""

from __future__ import annotations

import logging
from typing import TypeAlias

from celery import Celery

from infra.messages.job import JobMessage
from infra.redis import CONNECT_TIMEOUT_S, TIMEOUTS
from infra.settings import Settings
from infra.status import JobPriority
from workers.registry import DELIVER_WEBHOOK, PING, RUN_JOB

log = logging.getLogger("turnout.dispatch")

Producer: TypeAlias = Celery  # what sends: callers above workers/ name it without importing Celery

# Job state lives in Postgres; nobody waits on these tasks' results. Said on the send, because a
# send by name cannot see the task's own setting: without it Celery subscribes the sender to a
# result channel per message (a round trip on every submission, and a subscription never removed).
IGNORE_RESULT = True


def create_producer(settings: Settings) -> Producer:
    """The API's sender for these settings' broker and key prefix. The submission path must not hang
    on a frozen broker: bounded socket waits and one retry, then the send fails (the job is stored;
    the sweeper sends it later)."""
    from workers.app import create_celery

    producer = create_celery(settings)
    producer.conf.broker_transport_options = {**producer.conf.broker_transport_options, **TIMEOUTS}
    producer.conf.broker_connection_timeout = CONNECT_TIMEOUT_S
    producer.conf.task_publish_retry_policy = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2,
                                               "interval_max": 0.2}
    return producer


def send_run_job(
    app: Celery, settings: Settings, job_id: str, *, countdown: float | None = None,
    submitted: JobMessage | None = None, priority: JobPriority = JobPriority.INTERACTIVE,
) -> bool:
    """`submitted`: the question as stored with the job, so the runner can start routing while it
    claims the job; without it the runner reads it first. (`run_job(job_id, submitted)`: a message
    from before it went as a positional argument carried it as the keyword; both run.)
    `priority`: a batch job's message waits behind every interactive one on the router queue."""
    try:
        app.send_task(
            RUN_JOB.name, args=[job_id] if submitted is None else [job_id, submitted.wire()],
            queue=RUN_JOB.queue.value, countdown=countdown, priority=priority.broker_priority,
            expires=settings.task_expires_s + (countdown or 0), ignore_result=IGNORE_RESULT,
        )
    except Exception as exc:  # the broker's errors vary by transport; the sweeper retries
        log.warning("could not enqueue job %s (the sweeper will): %s", job_id, exc)
        return False
    return True


def send_webhook(app: Celery, settings: Settings, delivery_id: int, *, countdown: float | None = None) -> bool:
    try:
        # No `expires`: a delivery may wait hours between attempts (the claim drops stale copies).
        app.send_task(
            DELIVER_WEBHOOK.name, args=[delivery_id], queue=DELIVER_WEBHOOK.queue.value, countdown=countdown,
            ignore_result=IGNORE_RESULT,
        )
    except Exception as exc:
        log.warning("could not enqueue webhook delivery %s (the sweeper will): %s", delivery_id, exc)
        return False
    return True


def answers_ping(app: Celery, *, timeout: float) -> bool:
    """Whether a worker on `app`'s broker answers a `ping` on the maintenance queue within `timeout`.

    The reply's subscription is dropped before this returns, answered or not. Left to the garbage
    collector, a pending result unsubscribes over the network from whichever thread collects it
    (Celery's `AsyncResult.__del__`); when that broker's Redis is frozen or gone by then, the thread
    blocks for ~20 s (Celery's reconnect retries) to minutes (a frozen server: a 120 s read timeout)."""
    try:
        result = app.send_task(PING.name, queue=PING.queue.value, expires=10)
    except Exception:  # the broker's errors vary by transport: not answered
        return False
    try:
        return bool(result.get(timeout=timeout)["pong"])
    except Exception:  # no answer in time, or the worker failed the ping
        return False
    finally:
        result.backend.remove_pending_result(result)
