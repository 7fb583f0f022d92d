"""Task statistics, the writing side: Celery signal handlers record what workers did."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from infra.settings import Settings
from workers.taskstats._keys import (
    BUCKET_TTL_S,
    KOMBU_PRIORITY_STEPS,
    RECENT_FAILURES,
    _depth_key,
    _failures_key,
    _hist_key,
    _minute_key,
    _totals_key,
    _workers_key,
    bucket_index,
    minute_of,
    queue_list_keys,
)


@dataclass
class WorkerBeat:
    hostname: str
    pid: int
    queues: list[str]
    concurrency: int | None
    started_at: float


class TaskStatsWriter:
    """Synchronous writer used from Celery signal handlers (worker threads, publishers)."""

    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        self.settings = settings
        self.client = client

    def record_finished(
        self, *, queue: str, task: str, state: str, run_s: float | None, wait_s: float | None, at: float
    ) -> None:
        s = self.settings
        bucket = _minute_key(s, queue, minute_of(at))
        hist = _hist_key(s, queue)
        pipe = self.client.pipeline(transaction=False)
        pipe.hincrby(bucket, f"n:{state}", 1)
        pipe.hincrby(_totals_key(s), f"{queue}\t{task}\t{state}", 1)
        for name, value in (("run", run_s), ("wait", wait_s)):
            if value is None:
                continue
            value = max(value, 0.0)
            i = bucket_index(value)
            pipe.hincrby(bucket, f"{name}:{i}", 1)
            pipe.hincrby(hist, f"{name}:{i}", 1)
            pipe.hincrbyfloat(hist, f"{name}:sum", value)
        pipe.expire(bucket, BUCKET_TTL_S)
        pipe.execute()

    def record_failure(self, *, queue: str, task: str, task_id: str, error: str, at: float) -> None:
        entry = json.dumps({"queue": queue, "task": task, "taskId": task_id, "error": error[:500], "at": at})
        pipe = self.client.pipeline(transaction=False)
        pipe.lpush(_failures_key(self.settings), entry)
        pipe.ltrim(_failures_key(self.settings), 0, RECENT_FAILURES - 1)
        pipe.execute()

    def record_depths(self, depths: Mapping[str, int], at: float) -> None:
        if depths:
            record_depths_pipeline(self.client.pipeline(transaction=False), self.settings, depths, at).execute()

    def read_depths(self, queues: Iterable[str]) -> dict[str, int]:
        queues = list(queues)
        pipe = self.client.pipeline(transaction=False)
        for q in queues:
            for k in queue_list_keys(self.settings, q):
                pipe.llen(k)
        return _sum_depths(queues, pipe.execute())

    def record_worker(self, beat: WorkerBeat, at: float) -> None:
        value = json.dumps({"hostname": beat.hostname, "pid": beat.pid, "queues": sorted(beat.queues),
                            "concurrency": beat.concurrency, "startedAt": beat.started_at, "lastSeen": at})
        self.client.hset(_workers_key(self.settings), beat.hostname, value)

    def forget_worker(self, hostname: str) -> None:
        self.client.hdel(_workers_key(self.settings), hostname)


def record_depths_pipeline(pipe: Any, settings: Settings, depths: Mapping[str, int], at: float) -> Any:
    """Keep the peak depth per queue and minute (ZADD GT), for the depth-over-time chart."""
    k = _depth_key(settings, minute_of(at))
    pipe.zadd(k, {q: d for q, d in depths.items()}, gt=True)
    pipe.expire(k, BUCKET_TTL_S)
    return pipe


def _sum_depths(queues: Sequence[str], lengths: Sequence[Any]) -> dict[str, int]:
    per = len(KOMBU_PRIORITY_STEPS)
    return {q: sum(int(n or 0) for n in lengths[i * per:(i + 1) * per]) for i, q in enumerate(queues)}
