"""Prometheus exposition of the operations figures (the same `OpsData` as /v1/ops/queues).

Turnout runs as many processes (API, workers on several machines), so metrics are not kept
in per-process counters: workers record task statistics in Redis and the trail lives in
Postgres; a custom collector turns one `OpsData` reading into metric families at scrape time.
Counters only ever go up (totals since statistics began); gauges are current values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

import asyncpg
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from api.ops import OpsData, reembed_summary
from infra import counters
from infra.db.feedback import FeedbackCount
from infra.status import JobStatus
from workers.taskstats import PROMETHEUS_BOUNDS_S

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Buckets = list[tuple[str, float]]


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else f"{bound:g}"


def _buckets(cumulative: Iterable[tuple[float, int]]) -> Buckets:
    return [(_le(le), float(n)) for le, n in cumulative]


def _audit_histograms(
    name: str, doc: str, label: str, rows: Sequence[asyncpg.Record], bounds: Sequence[float]
) -> HistogramMetricFamily:
    """Rows of (label, bucket index, n, sum_s) -> one cumulative histogram per label value."""
    per_label: dict[str, tuple[list[int], list[float]]] = {}
    for r in rows:
        if r["bucket"] is None:
            continue  # no latency recorded for this row
        counts, total = per_label.setdefault(r["label"], ([0] * (len(bounds) + 1), [0.0]))
        counts[int(r["bucket"])] += int(r["n"])
        total[0] += float(r["sum_s"])
    family = HistogramMetricFamily(name, doc, labels=[label])
    for value, (counts, total) in sorted(per_label.items()):
        running, buckets = 0, []
        for le, n in zip([*bounds, math.inf], counts, strict=True):
            running += n
            buckets.append((_le(le), float(running)))
        family.add_metric([value], buckets, sum_value=total[0])
    return family


class OpsCollector(Collector):
    """Yields metric families for one reading; build a fresh one per scrape."""

    def __init__(self, data: OpsData) -> None:
        self.data = data

    def collect(self) -> Iterator[Metric]:
        d = self.data
        yield from _queue_families(d)
        yield from _worker_families(d)
        yield from _job_families(d)
        yield from _llm_families(d)
        yield from _rate_limit_families(d)
        yield from _reliability(d)
        yield from _webhook_families(d)
        yield from _reembed_families(d)
        yield from _latency_families(d)


def _queue_families(d: OpsData) -> Iterator[Metric]:
    """Depth, reservations, consumers, task counts and latency histograms per queue."""
    queues = d.stats.queues
    depth = GaugeMetricFamily("turnout_queue_depth", "Messages waiting in the queue", labels=["queue"])
    reserved = GaugeMetricFamily("turnout_queue_reserved",
                                 "Messages taken by a worker and not yet acknowledged", labels=["queue"])
    oldest = GaugeMetricFamily("turnout_queue_oldest_message_age_seconds",
                               "Age of the oldest waiting message (0 when the queue is empty)", labels=["queue"])
    consumers = GaugeMetricFamily("turnout_queue_consumers_alive", "Live workers consuming the queue",
                                  labels=["queue"])
    tasks = CounterMetricFamily("turnout_celery_tasks", "Tasks finished, by queue, task and status",
                                labels=["queue", "task", "status"])
    runtime = HistogramMetricFamily("turnout_celery_task_runtime_seconds", "Task run time", labels=["queue"])
    wait = HistogramMetricFamily("turnout_celery_queue_wait_seconds",
                                 "Time from publish (or ETA) to start", labels=["queue"])
    for q in queues:
        alive = sum(1 for w in d.stats.workers if w.alive and q.name in w.queues)
        depth.add_metric([q.name], q.depth)
        reserved.add_metric([q.name], q.reserved)
        oldest.add_metric([q.name], q.oldest_age_s or 0.0)
        consumers.add_metric([q.name], alive)
        for (task, status), n in sorted(q.totals_by_task.items()):
            tasks.add_metric([q.name, task, status], n)
        runtime.add_metric([q.name], _buckets(q.run_total.cumulative(PROMETHEUS_BOUNDS_S)),
                           sum_value=q.run_total.sum_s)
        wait.add_metric([q.name], _buckets(q.wait_total.cumulative(PROMETHEUS_BOUNDS_S)),
                        sum_value=q.wait_total.sum_s)
    yield from (depth, reserved, oldest, consumers, tasks, runtime, wait)


def _worker_families(d: OpsData) -> Iterator[Metric]:
    """One gauge per worker: its heartbeat is fresh or lost."""
    workers = GaugeMetricFamily("turnout_worker_up", "1 when the worker's heartbeat is fresh, 0 when lost",
                                labels=["worker"])
    for w in d.stats.workers:
        workers.add_metric([w.hostname], 1 if w.alive else 0)
    yield workers


def _job_families(d: OpsData) -> Iterator[Metric]:
    """Jobs by status, and by source and status."""
    jobs = GaugeMetricFamily("turnout_jobs", "Jobs by status", labels=["status"])
    for s in JobStatus:
        jobs.add_metric([s.value], d.jobs.get(s.value, 0))
    yield jobs
    by_source = GaugeMetricFamily("turnout_jobs_by_source", "Jobs by source (http, mcp) and status",
                                  labels=["source", "status"])
    for source, counts in sorted(d.jobs_by_source.items()):
        for s in JobStatus:
            by_source.add_metric([source, s.value], counts.get(s.value, 0))
    yield by_source


def _llm_families(d: OpsData) -> Iterator[Metric]:
    """LLM calls and tokens by kind and model."""
    calls = CounterMetricFamily("turnout_llm_calls", "LLM calls (routing rounds and RAG answers)",
                                labels=["kind", "model"])
    tokens = CounterMetricFamily("turnout_llm_tokens", "LLM tokens", labels=["kind", "model", "direction"])
    for r in d.llm_by_model:
        calls.add_metric([r["kind"], r["model"]], int(r["calls"]))
        tokens.add_metric([r["kind"], r["model"], "input"], int(r["input_tokens"]))
        tokens.add_metric([r["kind"], r["model"], "output"], int(r["output_tokens"]))
    yield from (calls, tokens)


def _rate_limit_families(d: OpsData) -> Iterator[Metric]:
    """Waits for the shared LLM rate limiter."""
    waits = CounterMetricFamily("turnout_rate_limit_waits", "Waits for the shared LLM rate limiter")
    waits.add_metric([], int(d.rate_limit["waits"]))
    waited = CounterMetricFamily("turnout_rate_limit_wait_seconds", "Time spent waiting for the LLM rate limiter")
    waited.add_metric([], float(d.rate_limit["waited_ms"]) / 1000.0)
    yield from (waits, waited)


def _webhook_families(d: OpsData) -> Iterator[Metric]:
    """Webhook deliveries by status and endpoints by health."""
    hooks = GaugeMetricFamily("turnout_webhook_deliveries", "Webhook deliveries by status "
                              "(retrying and delayed are subsets of pending; dead = dead-lettered)",
                              labels=["status"])
    for status in ("pending", "retrying", "delayed", "delivered", "dead", "disabled"):
        hooks.add_metric([status], int(d.webhooks[status]))
    yield hooks
    endpoints = GaugeMetricFamily("turnout_webhook_endpoints", "Webhook endpoints (API key, origin) by health "
                                  "(failing = enabled with failed attempts since its last success)",
                                  labels=["state"])
    for state in ("enabled", "failing", "disabled"):
        endpoints.add_metric([state], int(d.webhooks[f"endpoints_{state}"]))
    yield endpoints


def _reembed_families(d: OpsData) -> Iterator[Metric]:
    """The latest re-embedding run, if any."""
    run = reembed_summary(d.reembed)
    if run is not None:
        labels = ["run", "status", "model"]
        values = [run.id, run.status, run.model]
        for name, doc, value in (
            ("turnout_reembed_total", "Localizations in the latest re-embedding run", run.total),
            ("turnout_reembed_done", "Localizations re-embedded (or unchanged and copied)", run.done),
            ("turnout_reembed_failed", "Localizations in failed batches", run.failed),
            ("turnout_reembed_progress_ratio", "Progress of the latest re-embedding run (0..1)", run.progress),
        ):
            family = GaugeMetricFamily(name, doc, labels=labels)
            family.add_metric(values, value)
            yield family


def _latency_families(d: OpsData) -> Iterator[Metric]:
    """Tool executions and tool/LLM latency from the audit trail."""
    if d.latency is not None:
        tool_runs: dict[tuple[str, str], int] = {}
        for r in d.latency.tools:
            tool_runs[(r["label"], r["outcome"])] = tool_runs.get((r["label"], r["outcome"]), 0) + int(r["n"])
        executions = CounterMetricFamily("turnout_tool_executions", "Tool executions by tool and status",
                                         labels=["tool", "status"])
        for (tool, outcome), n in sorted(tool_runs.items()):
            executions.add_metric([tool, outcome or "unknown"], n)
        yield executions
        yield _audit_histograms("turnout_tool_latency_seconds", "Tool execution latency", "tool",
                                d.latency.tools, PROMETHEUS_BOUNDS_S)
        yield _audit_histograms("turnout_llm_call_latency_seconds", "LLM call latency", "model",
                                d.latency.llm, PROMETHEUS_BOUNDS_S)


# Reliability counters (infra/counters.py): name -> (metric name, help, label names).
_COUNTERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    counters.LLM_CALLS: ("turnout_llm_call_outcomes", "LLM HTTP attempts by kind (route | answer) and outcome "
                         "(ok | 429 | 5xx | timeout | unreachable | rejected)", ("kind", "outcome")),
    counters.LLM_RETRIES: ("turnout_llm_retries", "LLM attempts that were retried", ("kind",)),
    counters.FALLBACKS: ("turnout_router_fallbacks", "Routings through the deterministic fallback, by reason",
                         ("reason",)),
    counters.RATE_LIMIT: ("turnout_rate_limiter_outcomes", "LLM rate-limiter waits that got a permit (waited) "
                          "or ran into the job's deadline (gave_up)", ("outcome",)),
    counters.PAGE_CACHE: ("turnout_page_cache_requests", "Result pages served from the cache (hit) or searched "
                          "again (miss)", ("outcome",)),
    counters.TOOL_RESENDS: ("turnout_tool_resends", "Search/RAG tasks sent again because their worker died",
                            ("task",)),
    counters.SUPERVISOR_RESTARTS: ("turnout_supervisor_restarts", "Children of `turnout up` restarted by its "
                                   "supervisor", ("child",)),
    counters.ANSWER_CHECKS: ("turnout_answer_checks", "RAG model answers checked before acceptance, by attempt "
                             "(first | strict) and verdict (accepted or why it is not an answer)", ("attempt", "verdict")),
    counters.ANSWER_OUTCOMES: ("turnout_answer_outcomes", "RAG answers by outcome (llm | llm_on_retry | "
                               "extractive_<why>)", ("outcome",)),
    counters.JOBS_PRUNED: ("turnout_retention_pruned", "Rows removed by job retention (TURNOUT_JOB_RETENTION_DAYS), "
                           "by what (jobs | events | audit | deliveries)", ("what",)),
}


def _reliability(d: OpsData) -> Iterator[Metric]:
    families = {name: CounterMetricFamily(metric, doc, labels=list(labels))
                for name, (metric, doc, labels) in _COUNTERS.items()}
    for name, labels, n in d.counters:
        if name in families:
            families[name].add_metric([labels.get(label, "") for label in _COUNTERS[name][2]], n)
    yield from families.values()


def feedback_family(counts: Sequence[FeedbackCount]) -> Metric:
    """Rated jobs by the tool that ran, how it was routed and the rating (issue 28)."""
    family = GaugeMetricFamily("turnout_job_feedback", "Rated jobs by tool, routedBy and rating (up | down)",
                               labels=["tool", "routed_by", "rating"])
    for c in counts:
        family.add_metric([c.tool or "none", c.routed_by or "none", c.rating], c.count)
    return family


class _Families(Collector):
    def __init__(self, families: Sequence[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def render(data: OpsData, *, feedback: Sequence[FeedbackCount] = ()) -> bytes:
    """The text exposition format for one reading (and the feedback counts read beside it)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(OpsCollector(data))
    registry.register(_Families([feedback_family(feedback)]))
    return generate_latest(registry)
