"""Worker life-cycle hooks (workers/lifecycle.py): started in list order at the worker's init,
stopped in reverse order at its shutdown, only in a worker of the app they were installed on; a
stop that fails does not keep the others from stopping. The drills that a real worker closes its
pools and the Qdrant Edge shard on SIGTERM are in tests/workers/test_reembed_worker.py."""

from __future__ import annotations

from dataclasses import dataclass

from celery import Celery, signals

from infra.settings import Settings
from workers.app import create_celery, worker_hooks
from workers.lifecycle import RUNTIMES, VECTOR_STORE, WorkerContext, install


class FakeWorker:
    """What Celery sends as the sender of worker_init / worker_shutdown (a WorkController)."""

    def __init__(self, app: Celery, concurrency: int | None = None, hostname: str = "") -> None:
        self.app, self.concurrency, self.hostname = app, concurrency, hostname


@dataclass
class Recorder:
    name: str
    calls: list[str]
    fail_stop: bool = False

    def start(self, worker: WorkerContext) -> None:
        self.calls.append(f"start {self.name} {worker.concurrency} {worker.hostname}")

    def stop(self, worker: WorkerContext) -> None:
        self.calls.append(f"stop {self.name}")
        if self.fail_stop:
            raise RuntimeError("cannot stop")


def test_hooks_start_in_order_and_stop_in_reverse_in_their_own_app_only() -> None:
    calls: list[str] = []
    app, other = Celery("hooks-a", set_as_current=False), Celery("hooks-b", set_as_current=False)
    install(app, [Recorder("pools", calls), Recorder("stats", calls, fail_stop=True), Recorder("slots", calls)])
    signals.worker_init.send(sender=FakeWorker(app=other, concurrency=2, hostname="b@h"))
    assert calls == []  # another app's worker
    signals.worker_init.send(sender=FakeWorker(app=app, concurrency=3, hostname="a@h"))
    assert calls == ["start pools 3 a@h", "start stats 3 a@h", "start slots 3 a@h"]
    calls.clear()
    signals.worker_shutdown.send(sender=FakeWorker(app=app))
    assert calls == ["stop slots", "stop stats", "stop pools"]  # the failing stop did not end it
    calls.clear()
    signals.worker_shutdown.send(sender=FakeWorker(app=app))
    assert calls == []  # stopped once


def test_the_closes_are_listed_first_so_they_stop_last(settings: Settings) -> None:
    hooks = worker_hooks()
    assert hooks[:2] == [VECTOR_STORE, RUNTIMES]
    assert [h.name for h in hooks[2:]] == ["task stats", "beat lifeline", "job slots", "request gate examples"]
    app = create_celery(settings)
    assert len(app.conf.turnout_worker_hooks) == 2  # the installed receivers, kept by the app
