"""The operations summary: queue health, task latency, jobs, LLM spend, webhooks, re-embedding.

One function gathers the raw figures (`gather_ops`), one shapes them for people and JSON
(`summarize` -> `OpsSummary`, served by /v1/ops/queues, drawn by the dashboard, printed by
`turnout status`); api/metrics.py exposes the same `OpsData` to Prometheus.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import redis.asyncio as aioredis

from api.ops_wire import (
    FailureEntry,
    JobsSummary,
    LlmModelUsage,
    LlmSummary,
    LlmWindow,
    OpsSummary,
    Percentiles,
    QueueConsumer,
    QueueSeries,
    QueueSummary,
    QueueWindowSummary,
    RateLimiterSummary,
    ReembedSummary,
    ReliabilitySummary,
    RestartEntry,
    Series,
    TokenCounts,
    WebhookSummary,
    WorkerSummary,
)
from infra import counters
from infra.counters import read_counters, read_restarts
from infra.db import ops as db_ops
from infra.db.jobs import count_by_source
from infra.db.reembed import Run, list_runs
from infra.settings import Settings
from infra.status import JobStatus, Queue
from retrieval.reembed import run_rate
from workers.taskstats import (
    PROMETHEUS_BOUNDS_S,
    WINDOWS_MIN,
    Histogram,
    QueueStats,
    StatsSnapshot,
    WorkerInfo,
    read_stats,
)

QUEUES: tuple[str, ...] = tuple(q.value for q in Queue)


# --------------------------------------------------------------------------- gathering


@dataclass
class LatencyHistograms:
    """Audit-trail latencies for Prometheus (all time): per tool and per LLM model."""

    tools: list[asyncpg.Record]
    llm: list[asyncpg.Record]


@dataclass
class OpsData:
    stats: StatsSnapshot
    jobs: dict[str, int]
    llm_by_model: list[asyncpg.Record]
    llm_minutes: list[asyncpg.Record]
    rate_limit: asyncpg.Record
    webhooks: asyncpg.Record
    webhook_minutes: list[asyncpg.Record]
    reembed: Run | None
    latency: LatencyHistograms | None
    jobs_by_source: dict[str, dict[str, int]] = field(default_factory=dict)
    counters: list[tuple[str, dict[str, str], int]] = field(default_factory=list)
    restarts: list[dict[str, Any]] = field(default_factory=list)


async def gather_ops(
    pool: asyncpg.Pool, redis: aioredis.Redis, settings: Settings, *, latency_histograms: bool = False
) -> OpsData:
    """Read everything once: Redis (queues, task stats) and Postgres, concurrently."""
    now = time.time()
    since = (int(now // 60) - max(WINDOWS_MIN) + 1) * 60.0

    async def from_db() -> tuple[Any, ...]:
        async with pool.acquire() as conn:
            by_source = await count_by_source(conn)
            jobs: dict[str, int] = {}
            for counts in by_source.values():
                for status, n in counts.items():
                    jobs[status] = jobs.get(status, 0) + n
            llm = await db_ops.llm_usage_by_model(conn)
            llm_minutes = await db_ops.llm_per_minute(conn, since)
            waits = await db_ops.rate_limit_waits(conn)
            hooks = await db_ops.webhook_summary(conn)
            hook_minutes = await db_ops.webhook_attempts_per_minute(conn, since)
            runs = await list_runs(conn, limit=1)
            reembed = runs[0] if runs else None
            latency = None
            if latency_histograms:
                latency = LatencyHistograms(
                    tools=await db_ops.latency_histogram(conn, [db_ops.TOOL_KIND], "tool", PROMETHEUS_BOUNDS_S),
                    llm=await db_ops.latency_histogram(conn, list(db_ops.LLM_KINDS), "model", PROMETHEUS_BOUNDS_S),
                )
            return jobs, llm, llm_minutes, waits, hooks, hook_minutes, reembed, latency, by_source

    stats, db, totals, restarts = await asyncio.gather(
        read_stats(redis, settings, QUEUES, now=now), from_db(), read_counters(redis, settings),
        read_restarts(redis, settings),
    )
    jobs, llm, llm_minutes, waits, hooks, hook_minutes, reembed, latency, by_source = db
    return OpsData(stats, jobs, llm, llm_minutes, waits, hooks, hook_minutes, reembed, latency, by_source, totals,
                   restarts)


# --------------------------------------------------------------------------- shaping


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 2)


def _percentiles(h: Histogram) -> Percentiles:
    return Percentiles(count=h.count, p50_ms=_ms(h.quantile(0.5)), p95_ms=_ms(h.quantile(0.95)))


def _queue_summary(q: QueueStats, workers: list[WorkerInfo]) -> QueueSummary:
    consumers = [QueueConsumer(hostname=w.hostname, alive=w.alive, last_seen_s=round(w.last_seen_age_s, 1))
                 for w in workers if q.name in w.queues]
    windows = {
        f"{m}m": QueueWindowSummary(
            minutes=m, tasks_per_minute=round(w.completed / m, 2),
            succeeded=w.counts.get("succeeded", 0), failed=w.counts.get("failed", 0),
            retried=w.counts.get("retried", 0), revoked=w.counts.get("revoked", 0),
            run_time=_percentiles(w.run), queue_wait=_percentiles(w.wait),
        )
        for m, w in q.windows.items()
    }
    totals: dict[str, int] = {}
    tasks: dict[str, dict[str, int]] = {}
    for (task, state), n in sorted(q.totals_by_task.items()):
        totals[state] = totals.get(state, 0) + n
        tasks.setdefault(task, {})[state] = n
    return QueueSummary(
        name=q.name, depth=q.depth, reserved=q.reserved,
        oldest_message_age_s=None if q.oldest_age_s is None else round(q.oldest_age_s, 1),
        consumers=consumers, consumers_alive=sum(1 for c in consumers if c.alive),
        windows=windows, totals=totals, tasks=tasks,
    )


def _llm_summary(rows: list[asyncpg.Record]) -> LlmSummary:
    def counts(calls: int, tin: int, tout: int) -> dict[str, int]:
        return {"calls": calls, "input_tokens": tin, "output_tokens": tout, "total_tokens": tin + tout}

    windows = {}
    for m in WINDOWS_MIN:
        c = counts(sum(int(r[f"calls_{m}m"]) for r in rows), sum(int(r[f"input_tokens_{m}m"]) for r in rows),
                   sum(int(r[f"output_tokens_{m}m"]) for r in rows))
        windows[f"{m}m"] = LlmWindow(minutes=m, calls_per_minute=round(c["calls"] / m, 2),
                                     tokens_per_minute=round(c["total_tokens"] / m, 1), **c)
    total = TokenCounts(**counts(sum(int(r["calls"]) for r in rows), sum(int(r["input_tokens"]) for r in rows),
                                 sum(int(r["output_tokens"]) for r in rows)))
    by_model = [
        LlmModelUsage(kind=r["kind"], model=r["model"], calls5m=int(r["calls_5m"]),
                      tokens5m=int(r["input_tokens_5m"]) + int(r["output_tokens_5m"]),
                      **counts(int(r["calls"]), int(r["input_tokens"]), int(r["output_tokens"])))
        for r in rows
    ]
    return LlmSummary(windows=windows, total=total, by_model=by_model)


def _rate_limiter(row: asyncpg.Record) -> RateLimiterSummary:
    p95 = row["p95_ms_60m"]
    return RateLimiterSummary(
        waits5m=int(row["waits_5m"]), waits60m=int(row["waits_60m"]), waits_total=int(row["waits"]),
        waitedS5m=round(float(row["waited_ms_5m"]) / 1000, 3),
        waitedS60m=round(float(row["waited_ms_60m"]) / 1000, 3),
        waited_s_total=round(float(row["waited_ms"]) / 1000, 3),
        p95WaitMs60m=None if p95 is None else round(float(p95), 1),
    )


def _webhooks(row: asyncpg.Record) -> WebhookSummary:
    age = row["oldest_pending_age_s"]
    return WebhookSummary(
        pending=int(row["pending"]), retrying=int(row["retrying"]), delayed=int(row["delayed"]),
        delivered=int(row["delivered"]), dead=int(row["dead"]), disabled=int(row["disabled"]),
        oldest_pending_age_s=None if age is None else round(float(age), 1),
        endpoints_enabled=int(row["endpoints_enabled"]), endpoints_failing=int(row["endpoints_failing"]),
        endpoints_disabled=int(row["endpoints_disabled"]),
    )


def reembed_summary(run: Run | None, *, now: datetime | None = None) -> ReembedSummary | None:
    """Progress as the re-embedding API reports it (retrieval/reembed.py `run_rate`)."""
    if run is None:
        return None
    rate = run_rate(run, now=now)
    processed = run.done + run.failed
    return ReembedSummary(
        id=run.id, status=run.status, model=run.model, collection=run.collection, total=run.total,
        done=run.done, failed=run.failed, chunks_embedded=run.embedded, chunks_skipped=run.skipped,
        progress=round(min(processed / run.total, 1.0), 4) if run.total else 1.0,
        rate_per_s=rate.rate_per_s, eta_s=rate.eta_s, error=run.error,
        created_at=run.created_at, started_at=run.started_at, updated_at=run.updated_at,
        finished_at=run.finished_at,
    )


def _series(data: OpsData) -> Series:
    stats = data.stats
    minute_numbers = [int(m // 60) for m in stats.minute_starts]
    index = {m: i for i, m in enumerate(minute_numbers)}
    n = len(minute_numbers)

    def per_minute(rows: list[asyncpg.Record], column: str) -> list[int]:
        out = [0] * n
        for r in rows:
            i = index.get(int(r["minute"]))
            if i is not None:
                out[i] += int(r[column])
        return out

    queues = {
        q.name: QueueSeries(
            depth=q.depth_series,
            succeeded=[m.counts.get("succeeded", 0) for m in q.minutes],
            failed=[m.counts.get("failed", 0) for m in q.minutes],
            retried=[m.counts.get("retried", 0) for m in q.minutes],
            run_p50_ms=[_ms(m.run.quantile(0.5)) for m in q.minutes],
            run_p95_ms=[_ms(m.run.quantile(0.95)) for m in q.minutes],
            wait_p95_ms=[_ms(m.wait.quantile(0.95)) for m in q.minutes],
        )
        for q in stats.queues
    }
    return Series(
        minute_starts=[int(m) for m in stats.minute_starts], queues=queues,
        llm_calls=per_minute(data.llm_minutes, "calls"),
        llm_input_tokens=per_minute(data.llm_minutes, "input_tokens"),
        llm_output_tokens=per_minute(data.llm_minutes, "output_tokens"),
        webhook_delivered=per_minute(data.webhook_minutes, "ok"),
        webhook_failed=per_minute(data.webhook_minutes, "failed"),
    )


def reliability_summary(data: OpsData) -> ReliabilitySummary:
    def by(name: str, label: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for counter, labels, n in data.counters:
            if counter == name:
                out[labels.get(label, "")] = out.get(labels.get(label, ""), 0) + n
        return out

    calls: dict[str, dict[str, int]] = {}
    for counter, labels, n in data.counters:
        if counter == counters.LLM_CALLS:
            kind = calls.setdefault(labels.get("kind", ""), {o: 0 for o in counters.LLM_OUTCOMES})
            kind[labels.get("outcome", "")] = kind.get(labels.get("outcome", ""), 0) + n
    return ReliabilitySummary(
        llm_calls=calls,
        llm_retries=by(counters.LLM_RETRIES, "kind"),
        fallbacks=by(counters.FALLBACKS, "reason"),
        rate_limiter={"waited": 0, "gave_up": 0, **by(counters.RATE_LIMIT, "outcome")},
        page_cache={"hit": 0, "miss": 0, **by(counters.PAGE_CACHE, "outcome")},
        tool_resends=by(counters.TOOL_RESENDS, "task"),
        restarts=by(counters.SUPERVISOR_RESTARTS, "child"),
        recent_restarts=[
            RestartEntry(child=str(r.get("child")), reason=str(r.get("reason")),
                         at=datetime.fromtimestamp(float(r.get("at", 0.0)), UTC), down_s=float(r.get("down_s", 0.0)))
            for r in data.restarts
        ],
    )


def summarize(data: OpsData) -> OpsSummary:
    stats = data.stats
    by_status = {s.value: data.jobs.get(s.value, 0) for s in JobStatus}
    return OpsSummary(
        generated_at=datetime.fromtimestamp(stats.now, UTC),
        queues=[_queue_summary(q, stats.workers) for q in stats.queues],
        workers=[
            WorkerSummary(hostname=w.hostname, pid=w.pid, queues=w.queues, concurrency=w.concurrency,
                          alive=w.alive, last_seen_s=round(w.last_seen_age_s, 1),
                          started_at=datetime.fromtimestamp(w.started_at, UTC) if w.started_at else None)
            for w in stats.workers
        ],
        jobs=JobsSummary(by_status=by_status, total=sum(by_status.values()), by_source=data.jobs_by_source),
        llm=_llm_summary(data.llm_by_model),
        rate_limiter=_rate_limiter(data.rate_limit),
        webhooks=_webhooks(data.webhooks),
        reembed=reembed_summary(data.reembed),
        recent_failures=[
            FailureEntry(queue=f["queue"], task=f["task"], task_id=f.get("taskId", ""), error=f["error"],
                         at=datetime.fromtimestamp(float(f["at"]), UTC))
            for f in stats.recent_failures
        ],
        series=_series(data),
        reliability=reliability_summary(data),
    )


async def ops_summary(pool: asyncpg.Pool, redis: aioredis.Redis, settings: Settings) -> OpsSummary:
    return summarize(await gather_ops(pool, redis, settings))
