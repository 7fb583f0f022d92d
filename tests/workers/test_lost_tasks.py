"""When is a task lost with its worker (workers/lost_tasks.py)? Real Redis: the task's state is
stored in Celery's real result backend, the heartbeats by the real `TaskStatsWriter`. (The
resend itself, with workers killed for real: tests/proof/test_fault_workers.py and
test_fault_supervisor.py.)"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest
import redis
from celery import Celery

from infra.redis import create_sync_redis
from infra.settings import Settings
from workers.app import create_celery
from workers.lost_tasks import SILENT_AFTER_S, LostTaskWatch
from workers.taskstats import TaskStatsWriter, WorkerBeat


@pytest.fixture
def app(settings: Settings) -> Iterator[Celery]:
    celery = create_celery(settings)
    yield celery
    celery.close()


@pytest.fixture
def client(settings: Settings) -> Iterator[redis.Redis]:
    c = create_sync_redis(settings)
    yield c
    c.close()


def _beat(writer: TaskStatsWriter, node: str, pid: int, *, started_at: float, seen_at: float) -> None:
    writer.record_worker(WorkerBeat(hostname=node, pid=pid, queues=["search"], concurrency=4,
                                    started_at=started_at), seen_at)


def test_a_started_task_is_lost_only_when_its_worker_is(app: Celery, client: redis.Redis, settings: Settings) -> None:
    writer = TaskStatsWriter(settings, client)
    watch = LostTaskWatch(settings)
    node = f"front-{secrets.token_hex(3)}@host"
    now = time.time()
    sent_at = now - 3
    try:
        queued = app.AsyncResult(f"queued-{secrets.token_hex(4)}")
        assert watch.lost(queued, sent_at) is None  # PENDING: in the queue, a live worker takes it

        running = app.AsyncResult(f"running-{secrets.token_hex(4)}")
        app.backend.store_result(running.id, {"pid": 4242, "hostname": node}, "STARTED")
        assert "has no heartbeat" in (watch.lost(running, sent_at) or "")

        _beat(writer, node, 4242, started_at=now - 600, seen_at=now)  # the same process, beating
        assert watch.lost(running, sent_at) is None

        _beat(writer, node, 4242, started_at=now - 600, seen_at=now - SILENT_AFTER_S - 2)  # silent
        assert "sent no heartbeat" in (watch.lost(running, sent_at) or "")

        _beat(writer, node, 5151, started_at=now - 1, seen_at=now)  # same node name, started after the send
        assert "started again (pid 5151)" in (watch.lost(running, sent_at) or "")

        # A prefork child's pid is not the worker's: no restart unless the worker started after the send.
        _beat(writer, node, 5151, started_at=now - 600, seen_at=now)
        assert watch.lost(running, sent_at) is None

        app.backend.store_result(running.id, {"ok": True}, "SUCCESS")
        assert watch.lost(running, sent_at) is None  # finished: nothing to send again
    finally:
        writer.forget_worker(node)
        watch.close()
