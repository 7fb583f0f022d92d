"""The Celery application: queues, durable task defaults, routing by task name.

Nothing is built at import: `create_celery(settings)` makes an app (every task registered, see
`workers.base`), `app_for(settings)` keeps one per broker and key prefix in a process (the
sending side: the API, the runner, re-embedding), and `process_app()` is this process's own,
from its settings. `celery -A workers.app worker -Q rag` (what `turnout worker` runs) finds
`app`, which builds `process_app()` when Celery first asks for it: the worker's start-up.
"""

from __future__ import annotations

import threading
from typing import Any

from celery import Celery
from kombu import Queue as KombuQueue

from infra.redis import key
from infra.settings import Settings, get_settings
from infra.status import Queue
from workers import registry
from workers.lifecycle import RUNTIMES, VECTOR_STORE, WorkerHook, install


def create_celery(settings: Settings) -> Celery:
    from workers.base import register_tasks  # the task modules import this one's callers

    app = Celery("turnout", set_as_current=False)
    transport = {
        "global_keyprefix": key(settings, "celery", ""),
        # A message not acked within this window is redelivered (worker lost mid-task).
        "visibility_timeout": max(int(settings.job_lease_s) * 2, 600),
    }
    app.conf.update(
        broker_url=settings.redis_url or "redis://127.0.0.1:6379/0",
        broker_transport_options=transport,
        result_backend=settings.redis_url or "redis://127.0.0.1:6379/0",
        result_backend_transport_options={"global_keyprefix": key(settings, "celery-result", "")},
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
                "task": registry.SWEEP.name,
                "schedule": settings.job_sweep_interval_s,
                "options": {"queue": registry.SWEEP.queue.value, "expires": settings.job_sweep_interval_s},
            },
            # Retention (infra/db/retention.py); with TURNOUT_JOB_RETENTION_DAYS=0 the task does nothing.
            "prune-jobs": {
                "task": registry.PRUNE_JOBS.name,
                "schedule": settings.job_retention_interval_s,
                "options": {"queue": registry.PRUNE_JOBS.queue.value, "expires": settings.job_retention_interval_s},
            },
        },
    )
    register_tasks(app, settings)
    install(app, worker_hooks())
    return app


def worker_hooks() -> list[WorkerHook]:
    """What a worker process starts (in this order) and stops (in the reverse order), see
    workers/lifecycle.py. The closes come first, so they run last: after the hooks using them."""
    from workers.lifeline import LIFELINE
    from workers.signals import WORKER_STATS
    from workers.tasks.jobs import GATE_EXAMPLES, JOB_SLOTS

    return [
        VECTOR_STORE,  # stop: the Qdrant Edge shard closed (the vector worker's; data safety)
        RUNTIMES,  # stop: every thread's PostgreSQL pool, Redis client and extras' clients closed
        WORKER_STATS,  # start: heartbeat entry, depth sampling; stop: last counters, entry removed
        LIFELINE,  # start: the embedded beat (-B) dies with its worker
        JOB_SLOTS,  # start: jobs leave a thread to the other queues; the language detector built
        GATE_EXAMPLES,  # start (router workers): the request gate's embedding model and examples loaded
    ]


_apps: dict[tuple[str, str], Celery] = {}
_apps_lock = threading.Lock()


def app_for(settings: Settings) -> Celery:
    """The app for these settings' broker and key prefix, built once per process (sending needs
    no more; an isolated stack or changed settings, as `turnout up` has, get their own)."""
    ident = (settings.redis_url or "", settings.redis_prefix)
    with _apps_lock:
        app = _apps.get(ident)
        if app is None:
            app = _apps[ident] = create_celery(settings)
        return app


def process_app() -> Celery:
    """This process's app (its settings): the one a worker runs and its tasks send with."""
    app = app_for(get_settings())
    app.set_current()
    app.set_default()
    return app


def __getattr__(name: str) -> Any:
    # `celery -A workers.app` looks up `app`; `celery_app` is the same, for scripts and tests.
    if name in ("app", "celery_app"):
        return process_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
