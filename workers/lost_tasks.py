"""Noticing a search or RAG task that died with its worker, so the executor sends it again.

A task is acknowledged only after it ran (late ack), but a worker killed mid-task leaves its
message unacknowledged until the broker's visibility timeout (ten minutes): far past any job
deadline. So while the executor waits, it watches the task: once it has run longer than
``CHECK_AFTER_S``, every ``CHECK_EVERY_S`` it reads the task's state (STARTED carries the
worker's node name, `track_started`) and that worker's heartbeat (workers/taskstats/). The task
is lost when its worker's heartbeat is gone (silent past ``SILENT_AFTER_S``, or no entry) or the
worker started again after the task was sent (same node name, another process). The executor then
sends the task again (at most ``MAX_RESENDS`` times), so the job succeeds once any worker of
that queue is alive; the first reply wins and every other copy's result is ignored by task id.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from celery.result import AsyncResult

from infra.settings import Settings
from infra.transient import REDIS_FAILED
from workers.taskstats import read_workers_sync

log = logging.getLogger("turnout.jobs")

CHECK_AFTER_S = 1.0  # a task running shorter than this is not looked at (most searches)
CHECK_EVERY_S = 1.0
MAX_RESENDS = 3
# Celery heartbeats every 2 s: three missed ones say the worker is gone. Tighter than the 15 s the
# dashboard uses (`WORKER_ALIVE_S`): a false alarm costs one duplicate task, ignored by task id.
SILENT_AFTER_S = 6.0
_REDIS_TIMEOUT_S = 1.0


class LostTaskWatch:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client = redis.Redis.from_url(
            settings.redis_url or "redis://127.0.0.1:6379/0",
            socket_timeout=_REDIS_TIMEOUT_S, socket_connect_timeout=_REDIS_TIMEOUT_S,
        )

    def lost(self, result: AsyncResult[Any], sent_at: float) -> str | None:
        """Why the task can no longer reply (its worker is gone), or None while it still may.
        ``sent_at`` is the `time.time()` the task was sent. A read that fails says None: a
        resend needs evidence, not a Redis hiccup."""
        try:
            if result.state != "STARTED":
                return None  # waiting in the queue (a new worker takes it) or finished
            info = result.info if isinstance(result.info, dict) else {}
            node = str(info.get("hostname") or "")
            if not node:
                return None
            workers = {w.hostname: w for w in read_workers_sync(self.client, self.settings)}
        except REDIS_FAILED as exc:
            log.debug("lost-task watch: could not read the task's state or heartbeats: %s", exc)
            return None
        worker = workers.get(node)
        if worker is None:
            return f"its worker {node} has no heartbeat"
        # The same process (threads/solo pool: the task's pid is the worker's) is not a restart; a
        # prefork child's pid differs, so then only a worker start after the send says "restarted".
        same_process = info.get("pid") is not None and info.get("pid") == worker.pid
        if not same_process and worker.started_at is not None and worker.started_at > sent_at:
            return f"its worker {node} started again (pid {worker.pid}) after the task was sent"
        if worker.last_seen_age_s > SILENT_AFTER_S:
            return f"its worker {node} sent no heartbeat for {worker.last_seen_age_s:.0f}s"
        return None

    def close(self) -> None:
        self.client.close()
