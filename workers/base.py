"""`turnout_task`: the one way to declare a Celery task in Turnout.

Every task gets its name and queue from `workers.registry`, an `expires`, late ack with re-queue
on worker loss, and an in-task time limit (``run_in_task``) that applies in any pool, since
thread pools ignore Celery's own hard limit. Declaring reads no settings: the limits that depend
on them are set when an app is built (`register_tasks`, called by `workers.app.create_celery`).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from celery import Celery, Task
from celery.local import Proxy

from infra.settings import Settings, get_settings
from workers._runtime import Runtime, run_in_task
from workers.registry import TaskName

R = TypeVar("R")
Limit = float | Callable[[Settings], float]


@dataclass(frozen=True)
class _Declared:
    task: TaskName
    fn: Callable[..., Any]
    time_limit_s: Limit | None
    expires_s: float | None
    options: dict[str, Any] = field(default_factory=dict)


_declared: dict[str, _Declared] = {}


def turnout_task(
    task: TaskName,
    *,
    time_limit_s: Limit | None = None,
    expires_s: float | None = None,
    **options: Any,
) -> Callable[[Callable[..., Any]], Task]:
    """Declare `fn` as `task`. `time_limit_s` may be a function of the settings. The returned
    object is the task of this process's app (`workers.app.process_app()`)."""

    def declare(fn: Callable[..., Any]) -> Task:
        _declared[task.name] = _Declared(task, fn, time_limit_s, expires_s, options)

        def resolve() -> Task:
            from workers.app import process_app

            return process_app().tasks[task.name]

        return cast(Task, Proxy(resolve))

    return declare


def time_limit(limit: Limit | None, settings: Settings) -> float:
    if limit is None:
        return settings.task_soft_time_limit_s
    return limit(settings) if callable(limit) else limit


def register_tasks(app: Celery, settings: Settings) -> None:
    """Register every task module's tasks (`workers/tasks/`) and the per-message signal handlers
    (ops metrics: queue wait, run time) on `app`; the worker's own start and stop are its hooks
    (`workers.app.worker_hooks`)."""
    importlib.import_module("workers.signals")
    importlib.import_module("workers.tasks")
    for declared in _declared.values():
        limit = time_limit(declared.time_limit_s, settings)
        app.task(
            name=declared.task.name,
            queue=declared.task.queue.value,
            acks_late=True,
            reject_on_worker_lost=True,
            expires=declared.expires_s or settings.task_expires_s,
            soft_time_limit=int(limit) + 5,
            time_limit=int(limit) + 30,
            shared=False,
            **declared.options,
        )(declared.fn)


def run_async(fn: Callable[[Runtime], Awaitable[R]], *, timeout_s: float | None = None) -> R:
    """Run an async task body on this worker thread's loop, bounded by the task time limit."""
    return run_in_task(fn, timeout_s=timeout_s or get_settings().task_soft_time_limit_s)
