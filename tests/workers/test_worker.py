"""The Celery app against the real Redis broker and a real worker process."""

from __future__ import annotations

import threading
import time

import pytest

from infra.status import Queue
from tests.support.services import WorkerGroup
from workers._runtime import TaskDeadlineExceeded, run_in_task
from workers.app import celery_app


def test_every_queue_is_declared_and_routed() -> None:
    declared = {q.name for q in celery_app.conf.task_queues}
    assert declared == {q.value for q in Queue}
    ping = celery_app.tasks["turnout.maintenance.ping"]
    assert ping.queue == "maintenance"
    assert ping.acks_late and ping.reject_on_worker_lost
    assert ping.expires is not None


def test_worker_runs_a_task(celery_worker: WorkerGroup) -> None:
    from workers.tasks.maintenance import ping

    reply = ping.apply_async().get(timeout=30)
    assert reply["pong"] is True
    assert reply["pid"] != 0


def test_in_task_time_limit_applies_in_a_thread() -> None:
    """Thread pools ignore Celery's hard limit: run_in_task must stop the body itself."""
    import asyncio

    outcome: list[BaseException | None] = []

    async def too_slow(_rt: object) -> None:
        await asyncio.sleep(30)

    def body() -> None:
        try:
            run_in_task(too_slow, timeout_s=0.3)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=body)
    thread.start()
    thread.join(timeout=10)
    assert isinstance(outcome[0], TaskDeadlineExceeded)
    assert time.monotonic() - started < 5


def test_suite_fails_when_a_service_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support import services

    monkeypatch.setattr(services, "ADMIN_DSN", "postgresql://postgres@127.0.0.1:1/test")
    with pytest.raises(RuntimeError, match="PostgreSQL is not reachable"):
        services.require_postgres()
    monkeypatch.setattr(services, "TEST_REDIS_URL", "redis://127.0.0.1:1/0")
    with pytest.raises(RuntimeError, match="Redis is not reachable"):
        services.require_redis()
