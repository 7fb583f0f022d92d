"""Celery signal handlers that feed operations metrics (workers/taskstats/).

- every publisher stamps each message with its send time (queue wait, oldest message age);
- workers record per-queue run time, queue wait and outcome of every task, recent failures,
  their own heartbeat (which queues they consume, right now) and a sample of queue depths.

The per-message handlers are registered by every app `workers.app.create_celery` builds, so the API
(a publisher) and every worker get them; a worker's own heartbeat and its last flush are the
`WORKER_STATS` hook's, listed with the other worker hooks in `workers.app.worker_hooks`.
Recording must never break or slow a task: Redis calls use short timeouts and any error is
logged (at most once a minute) and dropped.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime
from typing import Any

import redis
from celery import signals

from infra import counters
from infra.settings import get_settings
from infra.status import Queue
from workers.registry import DELIVER_WEBHOOK, RUN_JOB
from workers.taskstats import SENT_AT_HEADER, TaskStatsWriter, WorkerBeat, state_name

log = logging.getLogger("turnout.ops")

DEPTH_SAMPLE_EVERY_S = 10.0
# Tasks that reschedule themselves (a new countdown message, not Celery's retry) or give up
# by design return an outcome instead of raising; count those runs as what they mean.
OUTCOME_STATES: dict[tuple[str, str], str] = {
    (RUN_JOB.name, "released"): "retried",  # a service was down; the job runs again
    (RUN_JOB.name, "failed"): "failed",  # the job ended failed
    (DELIVER_WEBHOOK.name, "retry"): "retried",  # attempt failed, next one scheduled
    (DELIVER_WEBHOOK.name, "dead"): "failed",  # dead-lettered
    (DELIVER_WEBHOOK.name, "disabled"): "failed",  # the failure disabled its endpoint
}
_REDIS_TIMEOUT_S = 1.0

_writer: TaskStatsWriter | None = None
_writer_lock = threading.Lock()
_started: dict[str, tuple[float, float | None]] = {}  # task id -> (monotonic start, queue wait)
_consumer: Any = None  # the worker's Consumer, kept to read the queues it consumes right now
_worker_started_at = 0.0
_last_depth_sample = 0.0
_last_error_logged = 0.0


def _get_writer() -> TaskStatsWriter:
    global _writer
    if _writer is None:
        with _writer_lock:
            if _writer is None:
                settings = get_settings()
                # Own client with short timeouts: a slow Redis must not stall tasks or heartbeats.
                client = redis.Redis.from_url(
                    settings.redis_url or "redis://127.0.0.1:6379/0",
                    socket_timeout=_REDIS_TIMEOUT_S, socket_connect_timeout=_REDIS_TIMEOUT_S,
                )
                _writer = TaskStatsWriter(settings, client)
    return _writer


def _safely(what: str, fn: Any, *args: Any, **kwargs: Any) -> None:
    global _last_error_logged
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # metrics are best effort; the task itself must go on
        if time.monotonic() - _last_error_logged > 60:
            _last_error_logged = time.monotonic()
            log.warning("ops metrics: could not record %s: %s", what, exc)


def _queue_of(task: Any) -> str:
    info = getattr(task.request, "delivery_info", None) or {}
    return str(info.get("routing_key") or getattr(task, "queue", None) or "unknown")


def _eta_ts(eta: Any) -> float | None:
    if isinstance(eta, datetime):
        return eta.timestamp()
    if isinstance(eta, str):
        try:
            return datetime.fromisoformat(eta).timestamp()
        except ValueError:
            return None
    return None


@signals.before_task_publish.connect
def stamp_sent_time(headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is not None:
        headers[SENT_AT_HEADER] = time.time()


@signals.task_prerun.connect
def on_task_prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task is None or task_id is None or task.request.is_eager:
        return
    sent = getattr(task.request, SENT_AT_HEADER, None)
    wait: float | None = None
    if isinstance(sent, int | float):
        # A countdown/ETA is planned waiting, not queueing: count from when it was due.
        due = max(float(sent), _eta_ts(getattr(task.request, "eta", None)) or 0.0)
        wait = max(time.time() - due, 0.0)
    _started[task_id] = (time.monotonic(), wait)


@signals.task_postrun.connect
def on_task_postrun(task_id: str | None = None, task: Any = None, state: str | None = None, retval: Any = None,
                    **_: Any) -> None:
    if task is None or task_id is None or task.request.is_eager:
        return
    started = _started.pop(task_id, None)
    run_s = time.monotonic() - started[0] if started else None
    outcome = state_name(state)
    if outcome == "succeeded" and isinstance(retval, str):
        outcome = OUTCOME_STATES.get((task.name, retval), outcome)
    _safely("task outcome", _get_writer().record_finished, queue=_queue_of(task), task=task.name,
            state=outcome, run_s=run_s, wait_s=started[1] if started else None, at=time.time())


@signals.task_failure.connect
def on_task_failure(task_id: str | None = None, exception: BaseException | None = None, sender: Any = None,
                    **_: Any) -> None:
    if sender is None or sender.request.is_eager:
        return
    error = f"{type(exception).__name__}: {exception}" if exception is not None else "unknown error"
    _safely("task failure", _get_writer().record_failure, queue=_queue_of(sender), task=sender.name,
            task_id=task_id or "", error=error, at=time.time())


@signals.task_revoked.connect
def on_task_revoked(request: Any = None, sender: Any = None, expired: bool = False, **_: Any) -> None:
    # Revoked/expired tasks never reach prerun; count them so they don't vanish silently.
    info = getattr(request, "delivery_info", None) or {}
    queue = str(info.get("routing_key") or getattr(sender, "queue", None) or "unknown")
    name = getattr(sender, "name", None) or "unknown"
    _safely("task revoked", _get_writer().record_finished, queue=queue, task=name, state="revoked",
            run_s=None, wait_s=None, at=time.time())


def _consumed_queues() -> list[str]:
    task_consumer = getattr(_consumer, "task_consumer", None)
    if task_consumer is None:
        return []
    return sorted({q.name for q in task_consumer.queues})


def _beat() -> WorkerBeat:
    controller = getattr(_consumer, "controller", None)
    return WorkerBeat(
        hostname=str(getattr(_consumer, "hostname", "") or f"pid-{os.getpid()}"),
        pid=os.getpid(),
        queues=_consumed_queues(),
        concurrency=getattr(controller, "concurrency", None),
        started_at=_worker_started_at,
    )


def on_worker_ready(sender: Any = None, **_: Any) -> None:
    global _consumer, _worker_started_at
    _consumer, _worker_started_at = sender, time.time()
    _safely("worker heartbeat", _get_writer().record_worker, _beat(), time.time())


def on_heartbeat(**_: Any) -> None:
    """Every Celery heartbeat (2 s): refresh this worker's entry; sample depths now and then."""
    global _last_depth_sample
    if _consumer is None:
        return
    writer = _get_writer()
    now = time.time()
    _safely("worker heartbeat", writer.record_worker, _beat(), now)
    _safely("reliability counters", counters.flush_sync, writer.client, writer.settings)
    if now - _last_depth_sample >= DEPTH_SAMPLE_EVERY_S:
        _last_depth_sample = now
        _safely("queue depth", lambda: writer.record_depths(writer.read_depths(q.value for q in Queue), now))


class WorkerStats:
    """A worker hook (workers/lifecycle.py): this worker's heartbeat entry and its sampling of queue
    depths while it runs; at its stop the last counters are written, the entry removed (the
    dashboard stops listing it at once) and the writer's Redis client closed."""

    name = "task stats"

    def start(self, worker: object) -> None:
        signals.worker_ready.connect(on_worker_ready)
        signals.heartbeat_sent.connect(on_heartbeat)

    def stop(self, worker: object) -> None:
        global _writer, _consumer
        signals.heartbeat_sent.disconnect(on_heartbeat)
        signals.worker_ready.disconnect(on_worker_ready)
        writer = _get_writer()
        _safely("reliability counters", counters.flush_sync, writer.client, writer.settings)
        if _consumer is not None:
            _safely("worker shutdown", writer.forget_worker, _beat().hostname)
        with _writer_lock:
            _writer, _consumer = None, None
        writer.client.close()


WORKER_STATS = WorkerStats()
