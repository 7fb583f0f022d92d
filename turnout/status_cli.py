"""`turnout status`: the operations summary in the terminal (the same figures as /v1/ops/queues)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from api.health import HealthReport, check_health
from api.ops import OpsSummary, ops_summary
from infra.db.pool import create_pool
from infra.redis import create_async_redis
from infra.settings import get_settings
from infra.transient import STORES_UNREADABLE

out = Console()

_STATUS_STYLE = {"up": "green", "down": "bold red", "not_configured": "yellow", "ok": "green",
                 "degraded": "yellow"}


async def _read() -> tuple[HealthReport, OpsSummary | str]:
    """Health always; the summary, or why it could not be read (a dependency is down)."""
    settings = get_settings()
    settings.require_services()
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    redis = create_async_redis(settings)
    try:
        report = await check_health(settings, pool, redis)
        try:
            summary: OpsSummary | str = await asyncio.wait_for(ops_summary(pool, redis, settings), timeout=15)
        except STORES_UNREADABLE as exc:
            summary = f"{type(exc).__name__}: {exc}"
        return report, summary
    finally:
        await redis.aclose()
        await pool.close()


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 10:
        return f"{value:.1f} ms"
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.2f} s"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    return f"{seconds / 60:.0f}m" if seconds < 7200 else f"{seconds / 3600:.1f}h"


def _health_table(report: HealthReport) -> Table:
    table = Table("dependency", "status", "latency", "detail", title=f"health: {report.status}",
                  title_style=_STATUS_STYLE[report.status], title_justify="left")
    for name, check in report.checks.items():
        table.add_row(name + (" (required)" if check.required else ""),
                      Text(check.status, style=_STATUS_STYLE[check.status]),
                      _ms(check.latency_ms) if check.latency_ms is not None else "-", check.detail or "")
    return table


def _queue_table(summary: OpsSummary) -> Table:
    table = Table("queue", title="queues (last 5 min; failed/retried also last 60 min)", title_justify="left")
    for column in ("depth", "in flight", "oldest", "workers", "tasks/min", "run p50/p95", "wait p50/p95", "failed",
                   "retried"):
        table.add_column(column, justify="right")
    for q in summary.queues:
        w5, w60 = q.windows["5m"], q.windows["60m"]
        workers = f"{q.consumers_alive}/{len(q.consumers)}"
        table.add_row(
            q.name, str(q.depth), str(q.reserved), _age(q.oldest_message_age_s),
            Text(workers, style="red" if q.consumers_alive == 0 else "green"),
            f"{w5.tasks_per_minute:g}", f"{_ms(w5.run_time.p50_ms)} / {_ms(w5.run_time.p95_ms)}",
            f"{_ms(w5.queue_wait.p50_ms)} / {_ms(w5.queue_wait.p95_ms)}",
            Text(f"{w5.failed} / {w60.failed}", style="red" if w5.failed else ""),
            f"{w5.retried} / {w60.retried}",
        )
    return table


def _workers_table(summary: OpsSummary) -> Table:
    table = Table("worker", "state", "queues", "last heartbeat", title="workers", title_justify="left")
    for w in summary.workers:
        table.add_row(w.hostname, Text("alive" if w.alive else "lost", style="green" if w.alive else "bold red"),
                      ",".join(w.queues), _age(w.last_seen_s) + " ago")
    if not summary.workers:
        table.add_row("(none)", Text("no worker heartbeat seen", style="red"), "", "")
    return table


def _facts(summary: OpsSummary) -> Table:
    jobs = summary.jobs.by_status
    llm5, total = summary.llm.windows["5m"], summary.llm.total
    hooks, limiter = summary.webhooks, summary.rate_limiter
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("jobs", "  ".join(f"{k} {v}" for k, v in jobs.items()))
    table.add_row("LLM", f"{llm5.calls_per_minute:g} calls/min, {llm5.tokens_per_minute:g} tokens/min (5 min); "
                  f"total {total.calls} calls, {total.total_tokens} tokens")
    table.add_row("rate limiter", f"{limiter.waits_5m} waits (5 min), {limiter.waits_60m} (60 min), "
                  f"{limiter.waited_s_60m:g}s waited (60 min)")
    table.add_row("webhooks", Text(f"pending {hooks.pending} (retrying {hooks.retrying}, delayed {hooks.delayed})  "
                                   f"delivered {hooks.delivered}  dead-lettered {hooks.dead}",
                                   style="red" if hooks.dead else ""))
    rel = summary.reliability
    route, answer = rel.llm_calls.get("route", {}), rel.llm_calls.get("answer", {})
    outcomes = "  ".join(f"{o} {route.get(o, 0) + answer.get(o, 0)}" for o in ("ok", "429", "5xx", "timeout",
                                                                              "unreachable", "rejected"))
    table.add_row("LLM outcomes", f"{outcomes}  (retries {sum(rel.llm_retries.values())})")
    table.add_row("fallbacks", "  ".join(f"{k} {v}" for k, v in sorted(rel.fallbacks.items())) or "none")
    table.add_row("limiter", f"waited {rel.rate_limiter.get('waited', 0)}, gave up {rel.rate_limiter.get('gave_up', 0)}"
                  f";  page cache hit {rel.page_cache.get('hit', 0)} / miss {rel.page_cache.get('miss', 0)}")
    restarts = "  ".join(f"{k} {v}" for k, v in sorted(rel.restarts.items()))
    last = rel.recent_restarts[0] if rel.recent_restarts else None
    table.add_row("restarts", Text((restarts or "none") + (
        f"  (last: {last.child}, {last.reason}, down {last.down_s:g}s, {last.at:%H:%M:%S} UTC)" if last else ""),
        style="yellow" if restarts else ""))
    if rel.tool_resends:
        table.add_row("tasks resent", "  ".join(f"{k} {v}" for k, v in sorted(rel.tool_resends.items())))
    run = summary.reembed
    if run is None:
        table.add_row("re-embedding", "no run yet")
    else:
        eta = f", ETA {_age(run.eta_s)}" if run.eta_s else ""
        rate = f", {run.rate_per_s:g}/s" if run.rate_per_s else ""
        table.add_row("re-embedding", f"{run.status} {run.done + run.failed}/{run.total} "
                      f"({run.progress:.0%}{rate}{eta}, {run.failed} failed) model {run.model}")
    return table


def status(
    as_json: Annotated[bool, typer.Option("--json", help="print the raw summary and health as JSON")] = False,
) -> None:
    """Queue health at a glance: dependencies, queues, workers, jobs, LLM spend, webhooks, re-embedding.

    Exits 1 when a required dependency (Postgres, Redis) is down."""
    report, summary = asyncio.run(_read())
    if as_json:
        doc = {"health": report.model_dump(mode="json", by_alias=True),
               "summary": summary.model_dump(mode="json", by_alias=True, exclude={"series"})
               if isinstance(summary, OpsSummary) else {"error": summary}}
        print(json.dumps(doc, indent=2))
    elif isinstance(summary, OpsSummary):
        out.print(Panel.fit(Group(_health_table(report), _queue_table(summary), _workers_table(summary), _facts(summary)),
                            title="turnout status", subtitle=summary.generated_at.strftime("%Y-%m-%d %H:%M:%S UTC")))
    else:
        out.print(Panel.fit(Group(_health_table(report), Text(f"cannot read the queue figures: {summary}", style="red")),
                            title="turnout status"))
    if report.status == "down" or not isinstance(summary, OpsSummary):
        raise typer.Exit(1)
