"""`turnout_task`: the one way to declare a Celery task in Turnout.

Every task gets a queue-derived name (`turnout.<queue>.<name>`), an `expires`, late ack with
re-queue on worker loss, and an in-task time limit (``run_in_task``) that applies in any
pool, since thread pools ignore Celery's own hard limit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from celery import Task

from infra.settings import get_settings
from infra.status import Queue
from workers._runtime import Runtime, run_in_task
from workers.app import celery_app

P = ParamSpec("P")
R = TypeVar("R")


def turnout_task(
    queue: Queue,
    name: str,
    *,
    time_limit_s: float | None = None,
    expires_s: float | None = None,
    **options: Any,
) -> Callable[[Callable[..., Any]], Task]:
    settings = get_settings()
    limit = time_limit_s or settings.task_soft_time_limit_s
    return celery_app.task(
        name=f"turnout.{queue.value}.{name}",
        queue=queue.value,
        acks_late=True,
        reject_on_worker_lost=True,
        expires=expires_s or settings.task_expires_s,
        soft_time_limit=int(limit) + 5,
        time_limit=int(limit) + 30,
        **options,
    )


def run_async(fn: Callable[[Runtime], Awaitable[R]], *, timeout_s: float | None = None) -> R:
    """Run an async task body on this worker thread's loop, bounded by the task time limit."""
    return run_in_task(fn, timeout_s=timeout_s or get_settings().task_soft_time_limit_s)
