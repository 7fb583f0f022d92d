"""The one Celery application: queues, durable task defaults, routing by task name.

Start a worker per queue with `turnout worker --queues rag,embeddings` (or plain
`celery -A workers.app worker -Q rag`).
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue as KombuQueue

from infra.settings import Settings, get_settings
from infra.status import Queue


def create_celery(settings: Settings) -> Celery:
    app = Celery("turnout")
    transport = {
        "global_keyprefix": settings.redis_prefix + "celery:",
        # A message not acked within this window is redelivered (worker lost mid-task).
        "visibility_timeout": max(int(settings.job_lease_s) * 2, 600),
    }
    app.conf.update(
        broker_url=settings.redis_url or "redis://127.0.0.1:6379/0",
        broker_transport_options=transport,
        result_backend=settings.redis_url or "redis://127.0.0.1:6379/0",
        result_backend_transport_options={"global_keyprefix": settings.redis_prefix + "celery-result:"},
        result_expires=3600,
        task_ignore_result=True,  # Postgres is the truth for job state
        task_serializer="json",
        accept_content=["json"],
        # Durability: ack only after the task body ran; a killed worker's message is re-queued.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=settings.celery_task_events,
        task_send_sent_event=settings.celery_task_events,
        task_queues=[KombuQueue(q.value, routing_key=q.value) for q in Queue],
        task_default_queue=Queue.MAINTENANCE.value,
        task_routes={f"turnout.{q.value}.*": {"queue": q.value} for q in Queue},
        task_time_limit=int(settings.task_soft_time_limit_s) + 30,
        task_soft_time_limit=int(settings.task_soft_time_limit_s),
        timezone="UTC",
        enable_utc=True,
        # The sweeper (re-enqueues orphaned jobs and webhook deliveries); beat runs embedded in the
        # front worker (`-B`). A tick that waited longer than the interval is dropped, not piled up.
        beat_schedule={
            "sweep-orphans": {
                "task": f"turnout.{Queue.MAINTENANCE.value}.sweep",
                "schedule": settings.job_sweep_interval_s,
                "options": {"queue": Queue.MAINTENANCE.value, "expires": settings.job_sweep_interval_s},
            }
        },
    )
    return app


celery_app = create_celery(get_settings())
app = celery_app  # `celery -A workers.app` finds `app`

# Register every task module (after `celery_app` exists: they decorate with it).
import workers.lifeline  # noqa: E402  (the embedded beat dies with its worker)
import workers.signals  # noqa: E402  (ops metrics: queue wait, run time, heartbeats)
import workers.tasks  # noqa: E402, F401
