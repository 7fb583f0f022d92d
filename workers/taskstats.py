"""Task statistics in Redis: what Celery workers did, readable by any process.

Workers write (``workers/signals.py``); the API, `turnout status` and `/metrics` read
(``api/ops.py``). Memory is bounded by construction:

- per queue and per minute, one hash with counters and two sparse latency histograms
  (run time, queue wait); it expires after ``BUCKET_TTL_S`` so only the last two hours exist;
- per queue, one cumulative histogram hash and one totals hash (fixed field sets, never
  expire: they are Prometheus counters and must only go up);
- per minute, one sorted set with the peak depth seen for each queue (expires);
- a capped list of recent failures and a hash of worker heartbeats (pruned when read).

Latencies go into fixed buckets (the R10 series: 10 per decade, 1 ms .. 1000 s), so a
percentile is an estimate within one bucket (~±12 %), which is what a dashboard needs, and
histograms of any window are a sum of bucket counts.
"""

from __future__ import annotations

import json
import math
import time
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio as aioredis

from infra.redis import key
from infra.settings import Settings

# Kombu's Redis transport: one list per queue and priority step; priority 0 has no suffix.
KOMBU_PRIORITY_SEP = "\x06\x16"
KOMBU_PRIORITY_STEPS = (0, 3, 6, 9)
SENT_AT_HEADER = "turnout_sent_at"  # stamped by workers/signals.py on every published task

BUCKET_S = 60
BUCKET_TTL_S = 2 * 3600  # > the longest window (60 min) plus slack for clock skew
WINDOWS_MIN = (5, 60)
WORKER_ALIVE_S = 15.0  # Celery heartbeats every 2 s; 15 s of silence means the worker is gone
WORKER_FORGET_S = 3600.0  # a lost worker stays visible (as lost) for an hour
RECENT_FAILURES = 50

STATES = ("succeeded", "failed", "retried", "revoked")
_CELERY_STATES = {"SUCCESS": "succeeded", "FAILURE": "failed", "RETRY": "retried", "REVOKED": "revoked"}


def _r10_bounds() -> tuple[float, ...]:
    steps = (1.0, 1.25, 1.6, 2.0, 2.5, 3.15, 4.0, 5.0, 6.3, 8.0)
    return tuple(round(m * 10.0**exp, 6) for exp in range(-3, 3) for m in steps) + (1000.0,)


BOUNDS_S: tuple[float, ...] = _r10_bounds()  # upper bounds; index len(BOUNDS_S) is +Inf
# The Prometheus exposition uses the familiar 1-2.5-5 subset (cumulative counts stay exact).
PROMETHEUS_BOUNDS_S: tuple[float, ...] = tuple(
    b for b in BOUNDS_S if round(b / 10 ** math.floor(math.log10(b)), 2) in (1.0, 2.5, 5.0)
)


def state_name(celery_state: str | None) -> str:
    return _CELERY_STATES.get(celery_state or "", "other")


def bucket_index(seconds: float) -> int:
    return bisect_left(BOUNDS_S, max(seconds, 0.0))


def minute_of(ts: float) -> int:
    return int(ts // BUCKET_S)


def queue_list_keys(settings: Settings, queue: str) -> list[str]:
    """The Redis lists holding `queue`'s waiting messages (one per kombu priority step)."""
    base = key(settings, "celery", queue)
    return [base if p == 0 else f"{base}{KOMBU_PRIORITY_SEP}{p}" for p in KOMBU_PRIORITY_STEPS]


def unacked_key(settings: Settings) -> str:
    return key(settings, "celery", "unacked")


def _minute_key(settings: Settings, queue: str, minute: int) -> str:
    return key(settings, "ops", "q", queue, minute)


def _depth_key(settings: Settings, minute: int) -> str:
    return key(settings, "ops", "depth", minute)


def _hist_key(settings: Settings, queue: str) -> str:
    return key(settings, "ops", "hist", queue)


def _totals_key(settings: Settings) -> str:
    return key(settings, "ops", "totals")


def _workers_key(settings: Settings) -> str:
    return key(settings, "ops", "workers")


def _failures_key(settings: Settings) -> str:
    return key(settings, "ops", "failures")


# --------------------------------------------------------------------------- writing (workers)


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


# --------------------------------------------------------------------------- reading


@dataclass
class Histogram:
    """Bucket counts over BOUNDS_S (+Inf last) and the sum of observed values (seconds)."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BOUNDS_S) + 1))
    sum_s: float = 0.0

    @property
    def count(self) -> int:
        return sum(self.counts)

    def add(self, other: Histogram) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.sum_s += other.sum_s

    def quantile(self, q: float) -> float | None:
        """Estimated q-quantile in seconds (linear inside the bucket); None without data."""
        total = self.count
        if total == 0:
            return None
        rank = q * total
        seen = 0
        for i, n in enumerate(self.counts):
            if n and seen + n >= rank:
                lower = BOUNDS_S[i - 1] if i > 0 else 0.0
                if i == len(BOUNDS_S):
                    return lower
                return lower + (BOUNDS_S[i] - lower) * max(rank - seen, 0.0) / n
            seen += n
        return BOUNDS_S[-1]

    def cumulative(self, bounds: Sequence[float]) -> list[tuple[float, int]]:
        """(le, cumulative count) pairs for `bounds` (each one of BOUNDS_S) and +Inf."""
        out: list[tuple[float, int]] = []
        running, i = 0, 0
        for le in bounds:
            while i < len(BOUNDS_S) and BOUNDS_S[i] <= le:
                running += self.counts[i]
                i += 1
            out.append((le, running))
        out.append((math.inf, self.count))
        return out


def _histograms_from_hash(fields: Mapping[bytes, bytes]) -> dict[str, Histogram]:
    hists = {"run": Histogram(), "wait": Histogram()}
    for raw_name, raw_value in fields.items():
        name, _, suffix = raw_name.decode().partition(":")
        hist = hists.get(name)
        if hist is None:
            continue
        if suffix == "sum":
            hist.sum_s = float(raw_value)
        elif suffix.isdigit() and int(suffix) < len(hist.counts):
            hist.counts[int(suffix)] += int(raw_value)
    return hists


@dataclass
class MinuteStats:
    counts: dict[str, int]
    run: Histogram
    wait: Histogram

    @classmethod
    def parse(cls, fields: Mapping[bytes, bytes]) -> MinuteStats:
        counts = {s: 0 for s in STATES}
        for raw_name, raw_value in fields.items():
            name = raw_name.decode()
            if name.startswith("n:"):
                counts[name[2:]] = counts.get(name[2:], 0) + int(raw_value)
        hists = _histograms_from_hash(fields)
        return cls(counts, hists["run"], hists["wait"])


@dataclass
class QueueWindow:
    minutes: int
    counts: dict[str, int]
    run: Histogram
    wait: Histogram

    @property
    def completed(self) -> int:
        return sum(self.counts.get(s, 0) for s in ("succeeded", "failed", "retried"))


@dataclass
class WorkerInfo:
    hostname: str
    pid: int | None
    queues: list[str]
    concurrency: int | None
    started_at: float | None
    last_seen_age_s: float

    @property
    def alive(self) -> bool:
        return self.last_seen_age_s <= WORKER_ALIVE_S


@dataclass
class QueueStats:
    name: str
    depth: int
    reserved: int
    oldest_age_s: float | None
    windows: dict[int, QueueWindow]
    minutes: list[MinuteStats]  # oldest first, one per minute of the longest window
    depth_series: list[int | None]
    totals_by_task: dict[tuple[str, str], int]  # (task, state) -> count since stats began
    run_total: Histogram
    wait_total: Histogram


@dataclass
class StatsSnapshot:
    now: float
    minute_starts: list[float]  # epoch seconds, oldest first
    queues: list[QueueStats]
    workers: list[WorkerInfo]
    recent_failures: list[dict[str, Any]]


async def read_stats(
    client: aioredis.Redis, settings: Settings, queues: Sequence[str], *, now: float | None = None
) -> StatsSnapshot:
    """Everything the workers recorded, plus live queue depths, in two pipelined round trips."""
    now = time.time() if now is None else now
    current = minute_of(now)
    span = max(WINDOWS_MIN)
    minutes = list(range(current - span + 1, current + 1))

    pipe = client.pipeline(transaction=False)
    for q in queues:
        for k in queue_list_keys(settings, q):
            pipe.llen(k)
    for q in queues:
        for k in queue_list_keys(settings, q):
            pipe.lindex(k, -1)  # LPUSH + RPOP: the tail is the oldest message
    pipe.hvals(unacked_key(settings))
    pipe.hgetall(_workers_key(settings))
    pipe.lrange(_failures_key(settings), 0, RECENT_FAILURES - 1)
    pipe.hgetall(_totals_key(settings))
    for q in queues:
        pipe.hgetall(_hist_key(settings, q))
    for m in minutes:
        pipe.zrange(_depth_key(settings, m), 0, -1, withscores=True)
    for q in queues:
        for m in minutes:
            pipe.hgetall(_minute_key(settings, q, m))
    replies = list(await pipe.execute())

    per = len(KOMBU_PRIORITY_STEPS)
    n_lists = len(queues) * per
    depths = _sum_depths(queues, replies[:n_lists])
    tails = replies[n_lists:2 * n_lists]
    cursor = 2 * n_lists
    unacked, workers_raw, failures_raw, totals_raw = replies[cursor:cursor + 4]
    cursor += 4
    hist_raw = replies[cursor:cursor + len(queues)]
    cursor += len(queues)
    depth_raw = replies[cursor:cursor + len(minutes)]
    cursor += len(minutes)
    minute_raw = replies[cursor:]

    # Record what we just observed, so the depth chart has points even with no worker alive.
    await record_depths_pipeline(client.pipeline(transaction=False), settings, depths, now).execute()
    depth_by_minute: list[dict[str, int]] = [{m.decode(): int(s) for m, s in z} for z in depth_raw]
    depth_by_minute[-1] = {q: max(depth_by_minute[-1].get(q, 0), d) for q, d in depths.items()}

    reserved = _reserved_by_queue(unacked)
    totals = _parse_totals(totals_raw)
    stats: list[QueueStats] = []
    for qi, q in enumerate(queues):
        per_minute = [MinuteStats.parse(h) for h in minute_raw[qi * len(minutes):(qi + 1) * len(minutes)]]
        windows = {w: _window(per_minute[-w:], w) for w in WINDOWS_MIN}
        hists = _histograms_from_hash(hist_raw[qi])
        stats.append(QueueStats(
            name=q,
            depth=depths[q],
            reserved=reserved.get(q, 0),
            oldest_age_s=_oldest_age(tails[qi * per:(qi + 1) * per], now),
            windows=windows,
            minutes=per_minute,
            depth_series=[d.get(q) for d in depth_by_minute],
            totals_by_task={(t, s): n for (qq, t, s), n in totals.items() if qq == q},
            run_total=hists["run"],
            wait_total=hists["wait"],
        ))
    workers, stale = _parse_workers(workers_raw, now)
    if stale:
        await client.hdel(_workers_key(settings), *stale)  # type: ignore[misc]  # redis-py types it sync|async
    return StatsSnapshot(
        now=now,
        minute_starts=[float(m * BUCKET_S) for m in minutes],
        queues=stats,
        workers=workers,
        recent_failures=[json.loads(f) for f in failures_raw],
    )


async def read_workers(client: aioredis.Redis, settings: Settings, *, now: float | None = None) -> list[WorkerInfo]:
    """The workers that sent a heartbeat within the last hour, alive or lost."""
    raw = await client.hgetall(_workers_key(settings))  # type: ignore[misc]  # redis-py types it sync|async
    workers, _stale = _parse_workers(raw, time.time() if now is None else now)
    return workers


def _window(minutes: Sequence[MinuteStats], size: int) -> QueueWindow:
    window = QueueWindow(size, {s: 0 for s in STATES}, Histogram(), Histogram())
    for m in minutes:
        for state, n in m.counts.items():
            window.counts[state] = window.counts.get(state, 0) + n
        window.run.add(m.run)
        window.wait.add(m.wait)
    return window


def _oldest_age(tails: Sequence[bytes | None], now: float) -> float | None:
    ages: list[float] = []
    for raw in tails:
        if not raw:
            continue
        try:
            sent = json.loads(raw).get("headers", {}).get(SENT_AT_HEADER)
        except (ValueError, AttributeError):
            continue  # not a message we can read; depth still counts it
        if isinstance(sent, int | float):
            ages.append(max(now - float(sent), 0.0))
    return max(ages) if ages else None


def _reserved_by_queue(unacked: Sequence[bytes]) -> dict[str, int]:
    """Messages taken by a worker and not yet acknowledged (kombu's ack emulation hash)."""
    counts: dict[str, int] = {}
    for raw in unacked:
        try:
            _message, _exchange, routing_key = json.loads(raw)
        except (ValueError, TypeError):
            continue
        if isinstance(routing_key, str):
            counts[routing_key] = counts.get(routing_key, 0) + 1
    return counts


def _parse_totals(raw: Mapping[bytes, bytes]) -> dict[tuple[str, str, str], int]:
    out: dict[tuple[str, str, str], int] = {}
    for name, value in raw.items():
        parts = name.decode().split("\t")
        if len(parts) == 3:
            out[(parts[0], parts[1], parts[2])] = int(value)
    return out


def _parse_workers(raw: Mapping[bytes, bytes], now: float) -> tuple[list[WorkerInfo], list[str]]:
    workers: list[WorkerInfo] = []
    stale: list[str] = []
    for hostname, value in raw.items():
        try:
            doc = json.loads(value)
        except ValueError:
            stale.append(hostname.decode())
            continue
        age = max(now - float(doc.get("lastSeen", 0.0)), 0.0)
        if age > WORKER_FORGET_S:
            stale.append(hostname.decode())
            continue
        workers.append(WorkerInfo(
            hostname=hostname.decode(), pid=doc.get("pid"), queues=list(doc.get("queues") or []),
            concurrency=doc.get("concurrency"), started_at=doc.get("startedAt"), last_seen_age_s=age,
        ))
    workers.sort(key=lambda w: w.hostname)
    return workers, stale


def read_workers_sync(client: redis.Redis, settings: Settings, *, now: float | None = None) -> list[WorkerInfo]:
    """`read_workers` for a thread without an event loop (the tool executor's lost-task watch)."""
    raw: Mapping[bytes, bytes] = client.hgetall(_workers_key(settings))  # type: ignore[assignment]
    return _parse_workers(raw, time.time() if now is None else now)[0]
