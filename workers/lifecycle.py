"""Worker life-cycle hooks, in the style of dramatiq's middleware and arq's on_startup/on_shutdown.

Each concern a worker process sets up and tears down is a `WorkerHook` with a `start` and a
`stop`; the list is written where the app is built (`workers.app.worker_hooks`) and installed on
it. `start` runs at `worker_init` (before the pool starts, so before any task), in list order;
`stop` at `worker_shutdown`, in reverse order: after a warm shutdown (SIGTERM, `turnout up`'s
Ctrl-C) has let the running tasks end, so what a stop closes (pools, Redis clients, the Qdrant
Edge shard) is no longer in use. A stop that fails is logged and the next one still runs.
Hooks run only in a worker of the app they were installed on (a process may build several apps).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from celery import Celery, signals

from infra.vectors import close_process_vector_store
from workers._runtime import close_runtimes

log = logging.getLogger("turnout.worker")


@dataclass(frozen=True)
class WorkerContext:
    """What a hook learns about the worker it runs in."""

    app: Celery
    queues: frozenset[str]  # the queues it consumes
    concurrency: int | None
    hostname: str


class WorkerHook(Protocol):
    @property
    def name(self) -> str: ...

    def start(self, worker: WorkerContext) -> None: ...

    def stop(self, worker: WorkerContext) -> None: ...


@dataclass(frozen=True)
class Hook:
    """A hook from two functions (either may do nothing)."""

    name: str
    on_start: Callable[[WorkerContext], None] | None = None
    on_stop: Callable[[WorkerContext], None] | None = None

    def start(self, worker: WorkerContext) -> None:
        if self.on_start is not None:
            self.on_start(worker)

    def stop(self, worker: WorkerContext) -> None:
        if self.on_stop is not None:
            self.on_stop(worker)


def _close_runtimes(worker: WorkerContext) -> None:
    closed = close_runtimes()
    log.info("worker stop: closed %d thread runtime(s) (PostgreSQL pools, Redis clients)", closed)


def _close_vector_store(worker: WorkerContext) -> None:
    if close_process_vector_store():  # Qdrant Edge: its shards flushed and unlocked
        log.info("worker stop: vector store closed")


# The closes, as hooks of their own: listed first, they stop last (after everything using them).
RUNTIMES = Hook("thread runtimes", on_stop=_close_runtimes)
VECTOR_STORE = Hook("vector store", on_stop=_close_vector_store)


def _context(app: Celery, sender: Any) -> WorkerContext:
    try:
        queues = frozenset(app.amqp.queues.consume_from or {})
    except AttributeError:
        queues = frozenset()
    concurrency = getattr(sender, "concurrency", None)
    return WorkerContext(app, queues, concurrency if isinstance(concurrency, int) else None,
                         str(getattr(sender, "hostname", "") or ""))


def install(app: Celery, hooks: Sequence[WorkerHook]) -> None:
    """Run `hooks` in a worker of `app`: each start at its init, each stop (reversed) at its shutdown."""
    started: list[tuple[WorkerHook, WorkerContext]] = []

    def on_init(sender: Any = None, **_: Any) -> None:
        if getattr(sender, "app", None) is not app:
            return
        worker = _context(app, sender)
        for hook in hooks:
            hook.start(worker)
            started.append((hook, worker))

    def on_shutdown(sender: Any = None, **_: Any) -> None:
        if getattr(sender, "app", None) is not app:
            return
        while started:
            hook, worker = started.pop()
            try:
                hook.stop(worker)
            except Exception:  # the others must still stop
                log.exception("worker stop: %s failed", hook.name)

    # Weak receivers, kept alive by the app: an app that is dropped (tests build many) takes them along.
    app.conf.turnout_worker_hooks = (on_init, on_shutdown)
    signals.worker_init.connect(on_init)
    signals.worker_shutdown.connect(on_shutdown)
