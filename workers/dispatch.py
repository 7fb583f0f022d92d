"""Sending job-API messages by task name (the API process does not need the task code).

Sends are best effort by design: Postgres holds the job and the delivery, and the sweeper
sends the message again if this one is lost (broker down, Redis restarted).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery

from infra.settings import Settings
from infra.status import Queue

log = logging.getLogger("turnout.dispatch")

RUN_JOB = f"turnout.{Queue.ROUTER.value}.run_job"
DELIVER_WEBHOOK = f"turnout.{Queue.WEBHOOKS.value}.deliver"
SWEEP = f"turnout.{Queue.MAINTENANCE.value}.sweep"
# Job state lives in Postgres; nobody waits on these tasks' results. Said on the send, because a
# send by name cannot see the task's own setting: without it Celery subscribes the sender to a
# result channel per message (a round trip on every submission, and a subscription never removed).
IGNORE_RESULT = True


def send_run_job(
    app: Celery, settings: Settings, job_id: str, *, countdown: float | None = None,
    submitted: dict[str, Any] | None = None,
) -> bool:
    """`submitted`: the question as stored with the job ({question, answerLanguage, pageSize, language}), so
    the runner can start routing while it claims the job; without it the runner reads it first."""
    try:
        app.send_task(
            RUN_JOB, args=[job_id], kwargs={"submitted": submitted} if submitted else None,
            queue=Queue.ROUTER.value, countdown=countdown,
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
            DELIVER_WEBHOOK, args=[delivery_id], queue=Queue.WEBHOOKS.value, countdown=countdown,
            ignore_result=IGNORE_RESULT,
        )
    except Exception as exc:
        log.warning("could not enqueue webhook delivery %s (the sweeper will): %s", delivery_id, exc)
        return False
    return True
