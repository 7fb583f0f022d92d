"""Task statistics in Redis (workers/taskstats/): windows, percentiles, depth, liveness, bounds.

Real Redis under a throwaway key prefix; time is passed explicitly (`at=`, `now=`) so windows
and expiry are checked without waiting.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
import redis
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from api.ops import reembed_summary
from infra.db.reembed import Run
from infra.settings import Settings
from tests.api.support import stack_settings
from tests.support import services
from workers.taskstats import (
    BOUNDS_S,
    BUCKET_TTL_S,
    PROMETHEUS_BOUNDS_S,
    WORKER_ALIVE_S,
    WORKER_FORGET_S,
    Histogram,
    TaskStatsWriter,
    WorkerBeat,
    bucket_index,
    queue_list_keys,
    read_stats,
)

QUEUES = ["search", "maintenance"]


@pytest.fixture
def scratch(settings: Settings) -> Iterator[Settings]:
    own = stack_settings(settings, redis_prefix=f"{settings.redis_prefix}stats-{secrets.token_hex(3)}:")
    yield own
    services.delete_redis_prefix(own.redis_prefix)


@pytest.fixture
def writer(scratch: Settings) -> Iterator[TaskStatsWriter]:
    client = redis.Redis.from_url(scratch.redis_url)
    yield TaskStatsWriter(scratch, client)
    client.close()


@pytest.fixture
async def reader(scratch: Settings) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(scratch.redis_url)
    yield client
    await client.aclose()


def _histogram(values: list[float]) -> Histogram:
    h = Histogram()
    for v in values:
        h.counts[bucket_index(v)] += 1
        h.sum_s += v
    return h


def test_bucket_grid() -> None:
    assert BOUNDS_S[0] == 0.001 and BOUNDS_S[-1] == 1000.0
    assert all(b / a < 1.3 for a, b in zip(BOUNDS_S, BOUNDS_S[1:], strict=False))  # <= ~12 % per bucket
    assert PROMETHEUS_BOUNDS_S[:4] == (0.001, 0.0025, 0.005, 0.01)
    assert set(PROMETHEUS_BOUNDS_S) <= set(BOUNDS_S)
    assert bucket_index(0.0) == 0 and bucket_index(5000.0) == len(BOUNDS_S)


def test_percentiles_fall_in_the_right_bucket() -> None:
    h = _histogram([i / 1000 for i in range(1, 101)])  # 1..100 ms, uniform
    p50, p95 = h.quantile(0.5), h.quantile(0.95)
    assert p50 is not None and p95 is not None
    assert 0.040 <= p50 <= 0.063
    assert 0.080 <= p95 <= 0.100
    assert Histogram().quantile(0.5) is None
    assert _histogram([4000.0]).quantile(0.99) == 1000.0  # past the grid: its lower bound


@given(st.lists(st.floats(min_value=0, max_value=2000, allow_nan=False), max_size=200))
@hypothesis_settings(max_examples=60, deadline=None)
def test_prometheus_buckets_are_exact_cumulative_counts(values: list[float]) -> None:
    cumulative = _histogram(values).cumulative(PROMETHEUS_BOUNDS_S)
    for le, n in cumulative:
        assert n == sum(1 for v in values if v <= le)
    assert cumulative[-1][1] == len(values)


async def test_windows_split_by_age(writer: TaskStatsWriter, reader: aioredis.Redis, scratch: Settings) -> None:
    now = time.time()
    for age_s, state in ((0, "succeeded"), (150, "failed"), (30 * 60, "succeeded"), (90 * 60, "succeeded")):
        writer.record_finished(queue="search", task="turnout.search.search", state=state, run_s=0.02, wait_s=0.005,
                               at=now - age_s)
    writer.record_finished(queue="search", task="turnout.search.search", state="retried", run_s=None, wait_s=None,
                           at=now)
    stats = await read_stats(reader, scratch, QUEUES, now=now)
    search = stats.queues[0]
    assert search.windows[5].counts == {"succeeded": 1, "failed": 1, "retried": 1, "revoked": 0}
    assert search.windows[60].counts == {"succeeded": 2, "failed": 1, "retried": 1, "revoked": 0}
    assert search.windows[5].run.count == 2 and search.windows[60].run.count == 3
    assert search.totals_by_task == {("turnout.search.search", "succeeded"): 3,
                                     ("turnout.search.search", "failed"): 1,
                                     ("turnout.search.search", "retried"): 1}
    assert search.run_total.count == 4 and search.run_total.sum_s == pytest.approx(0.08)
    assert sum(m.counts["succeeded"] for m in search.minutes) == 2
    assert len(stats.minute_starts) == 60
    assert stats.queues[1].windows[60].completed == 0
    # Minute buckets expire on their own: memory stays bounded without a cleaner.
    keys = [k for k in writer.client.scan_iter(match=f"{scratch.redis_prefix}ops:q:*")]
    assert keys and all(0 < cast(int, writer.client.ttl(k)) <= BUCKET_TTL_S for k in keys)


async def test_depth_keeps_the_peak_of_each_minute(writer: TaskStatsWriter, reader: aioredis.Redis,
                                                   scratch: Settings) -> None:
    minute = (time.time() // 60) * 60
    writer.record_depths({"search": 5, "maintenance": 0}, minute + 1)
    writer.record_depths({"search": 3, "maintenance": 2}, minute + 2)
    writer.record_depths({"search": 7}, minute - 60 + 1)
    stats = await read_stats(reader, scratch, QUEUES, now=minute + 3)
    search, maintenance = stats.queues
    assert search.depth_series[-1] == 5 and search.depth_series[-2] == 7
    assert maintenance.depth_series[-1] == 2
    assert search.depth_series[0] is None  # nobody looked: a gap, not a zero


async def test_waiting_messages_depth_and_oldest_age(reader: aioredis.Redis, scratch: Settings) -> None:
    """Messages published for real (stamped by workers/signals.py), priority sub-queues included."""
    from workers.app import create_celery

    app = create_celery(scratch)  # nobody consumes this prefix: the messages wait
    try:
        app.send_task("turnout.maintenance.ping", queue="maintenance")
        app.send_task("turnout.maintenance.ping", queue="maintenance", priority=9)
        app.send_task("turnout.maintenance.ping", queue="maintenance", priority=4)
    finally:
        app.close()
    # redis-py types its commands as "awaitable or value" for both clients; the reader is async.
    lengths = [await cast(Awaitable[int], reader.llen(k)) for k in queue_list_keys(scratch, "maintenance")]
    assert sorted(lengths) == [0, 1, 1, 1]  # three lists (priorities 0, 3 and 9) hold one each
    stats = await read_stats(reader, scratch, QUEUES, now=time.time() + 30)
    maintenance = stats.queues[1]
    assert maintenance.depth == 3
    assert maintenance.oldest_age_s is not None and 30 <= maintenance.oldest_age_s < 60
    assert maintenance.depth_series[-1] == 3  # the reading itself is recorded as a sample
    assert stats.queues[0].depth == 0 and stats.queues[0].oldest_age_s is None


async def test_worker_liveness(writer: TaskStatsWriter, reader: aioredis.Redis, scratch: Settings) -> None:
    now = time.time()
    writer.record_worker(WorkerBeat("w1@host", 101, ["search", "maintenance"], 4, now - 100), now)
    writer.record_worker(WorkerBeat("w2@host", 102, ["rag"], 2, now - 100), now - 3 * WORKER_ALIVE_S)
    stats = await read_stats(reader, scratch, QUEUES, now=now)
    by_name = {w.hostname: w for w in stats.workers}
    assert by_name["w1@host"].alive and not by_name["w2@host"].alive  # silent: lost, still listed
    later = await read_stats(reader, scratch, QUEUES, now=now + WORKER_FORGET_S)
    assert [w.hostname for w in later.workers] == ["w1@host"]
    assert not await cast(Awaitable[bool], reader.hexists(f"{scratch.redis_prefix}ops:workers", "w2@host"))  # pruned
    writer.forget_worker("w1@host")  # a graceful shutdown removes the entry at once
    assert (await read_stats(reader, scratch, QUEUES, now=now)).workers == []


def test_recent_failures_are_capped(writer: TaskStatsWriter, scratch: Settings) -> None:
    for i in range(60):
        writer.record_failure(queue="search", task="t", task_id=str(i), error="ValueError: x" * 100, at=time.time())
    key = f"{scratch.redis_prefix}ops:failures"
    assert writer.client.llen(key) == 50
    assert b'"taskId": "59"' in cast(bytes, writer.client.lindex(key, 0))  # newest first


def _run(**overrides: object) -> Run:
    now = datetime.now(UTC)
    values: dict[str, object] = {
        "id": "r", "status": "running", "scope": {}, "model": "m", "dimension": 512, "collection": "c",
        "source_collection": None, "total": 100, "done": 40, "failed": 0, "skipped": 30, "embedded": 90,
        "error": None, "created_at": now, "started_at": now - timedelta(seconds=20), "updated_at": now,
        "finished_at": None, "pending_batches": 6, "batches": 10,
    }
    values.update(overrides)
    return Run(**values)  # type: ignore[arg-type]


def test_reembed_progress_rate_and_eta() -> None:
    now = datetime.now(UTC)
    running = reembed_summary(_run(started_at=now - timedelta(seconds=20)), now=now)
    assert running is not None
    assert running.progress == 0.4 and running.rate_per_s == 2.0 and running.eta_s == 30.0
    assert (running.chunks_embedded, running.chunks_skipped) == (90, 30)
    with_failures = reembed_summary(_run(started_at=now - timedelta(seconds=20), failed=20), now=now)
    assert with_failures is not None and with_failures.progress == 0.6 and with_failures.eta_s == 20.0
    assert reembed_summary(None) is None
    not_started = reembed_summary(_run(done=0, status="queued", started_at=None))
    assert not_started is not None and not_started.rate_per_s is None and not_started.eta_s is None
    finished = reembed_summary(_run(status="succeeded", done=100, finished_at=now))
    assert finished is not None and finished.progress == 1.0 and finished.eta_s is None
    empty = reembed_summary(_run(status="succeeded", total=0, done=0))
    assert empty is not None and empty.progress == 1.0
