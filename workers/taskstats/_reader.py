"""Task statistics, the reading side: windows, percentiles, depths and workers for the API and the CLI."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio as aioredis

from infra.settings import Settings
from workers.taskstats._keys import (
    BOUNDS_S,
    BUCKET_S,
    KOMBU_PRIORITY_STEPS,
    RECENT_FAILURES,
    SENT_AT_HEADER,
    STATES,
    WINDOWS_MIN,
    WORKER_ALIVE_S,
    WORKER_FORGET_S,
    _depth_key,
    _failures_key,
    _hist_key,
    _minute_key,
    _totals_key,
    _workers_key,
    minute_of,
    queue_list_keys,
    unacked_key,
)
from workers.taskstats._writer import _sum_depths, record_depths_pipeline


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


@dataclass
class _StatsReplies:
    """The replies of `read_stats`'s pipeline, cut into their parts (the order `_stats_pipeline` sends)."""

    depths: dict[str, int]
    tails: list[Any]
    unacked: list[Any]
    workers: dict[Any, Any]
    failures: list[Any]
    totals: dict[Any, Any]
    hists: list[dict[Any, Any]]
    depth_by_minute: list[Any]
    per_minute: list[dict[Any, Any]]

    @classmethod
    def cut(cls, replies: list[Any], queues: Sequence[str], minutes: Sequence[int]) -> _StatsReplies:
        n_lists = len(queues) * len(KOMBU_PRIORITY_STEPS)
        cursor = 2 * n_lists + 4
        hists_end = cursor + len(queues)
        depth_end = hists_end + len(minutes)
        return cls(
            depths=_sum_depths(queues, replies[:n_lists]),
            tails=replies[n_lists:2 * n_lists],
            unacked=replies[2 * n_lists],
            workers=replies[2 * n_lists + 1],
            failures=replies[2 * n_lists + 2],
            totals=replies[2 * n_lists + 3],
            hists=replies[cursor:hists_end],
            depth_by_minute=replies[hists_end:depth_end],
            per_minute=replies[depth_end:],
        )


def _stats_pipeline(
    client: aioredis.Redis, settings: Settings, queues: Sequence[str], minutes: Sequence[int]
) -> Any:
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
    return pipe


def _queue_stats(
    raw: _StatsReplies, queues: Sequence[str], n_minutes: int, depth_by_minute: list[dict[str, int]], now: float
) -> list[QueueStats]:
    per = len(KOMBU_PRIORITY_STEPS)
    reserved = _reserved_by_queue(raw.unacked)
    totals = _parse_totals(raw.totals)
    stats: list[QueueStats] = []
    for qi, q in enumerate(queues):
        per_minute = [MinuteStats.parse(h) for h in raw.per_minute[qi * n_minutes:(qi + 1) * n_minutes]]
        hists = _histograms_from_hash(raw.hists[qi])
        stats.append(QueueStats(
            name=q,
            depth=raw.depths[q],
            reserved=reserved.get(q, 0),
            oldest_age_s=_oldest_age(raw.tails[qi * per:(qi + 1) * per], now),
            windows={w: _window(per_minute[-w:], w) for w in WINDOWS_MIN},
            minutes=per_minute,
            depth_series=[d.get(q) for d in depth_by_minute],
            totals_by_task={(t, s): n for (qq, t, s), n in totals.items() if qq == q},
            run_total=hists["run"],
            wait_total=hists["wait"],
        ))
    return stats


async def read_stats(
    client: aioredis.Redis, settings: Settings, queues: Sequence[str], *, now: float | None = None
) -> StatsSnapshot:
    """Everything the workers recorded, plus live queue depths, in two pipelined round trips."""
    now = time.time() if now is None else now
    current = minute_of(now)
    minutes = list(range(current - max(WINDOWS_MIN) + 1, current + 1))
    raw = _StatsReplies.cut(list(await _stats_pipeline(client, settings, queues, minutes).execute()), queues, minutes)

    # Record what we just observed, so the depth chart has points even with no worker alive.
    await record_depths_pipeline(client.pipeline(transaction=False), settings, raw.depths, now).execute()
    depth_by_minute: list[dict[str, int]] = [{m.decode(): int(s) for m, s in z} for z in raw.depth_by_minute]
    depth_by_minute[-1] = {q: max(depth_by_minute[-1].get(q, 0), d) for q, d in raw.depths.items()}

    workers, stale = _parse_workers(raw.workers, now)
    if stale:
        await client.hdel(_workers_key(settings), *stale)  # type: ignore[misc]  # redis-py types it sync|async
    return StatsSnapshot(
        now=now,
        minute_starts=[float(m * BUCKET_S) for m in minutes],
        queues=_queue_stats(raw, queues, len(minutes), depth_by_minute, now),
        workers=workers,
        recent_failures=[json.loads(f) for f in raw.failures],
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
