"""/v1/ops/queues, /metrics and `turnout status` report exactly the work done in a real stack.

One isolated stack (own database, Redis prefix, worker, API) per module; the work is done
once (pings, searches, a failing search, jobs in every status, three webhook deliveries:
delivered / retried-and-delayed / dead-lettered, audit rows, a re-embedding run) and each
test checks one figure family against it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from infra.db.audit import AuditEvent
from infra.settings import Settings
from tests.api.ops_fixtures import (
    OpsStack,
    Work,
    add_audit,
    add_reembed_run,
    make_jobs,
    ops_stack,
    run_pings,
    run_searches,
    wait_deliveries_settled,
    wait_worker_seen,
)
from tests.api.support import settings_env, webhook_receiver
from tests.support.services import ARTIFACTS, REPO_ROOT


@dataclass
class Seeded:
    stack: OpsStack
    work: Work
    before: dict[str, Any]
    after: dict[str, Any]
    deliveries: dict[str, dict[str, Any]]


ROUTER_MODEL, ANSWER_MODEL = "router-model-x", "answer-model-y"


@pytest.fixture(scope="module")
def seeded(test_environment: None, settings: Settings) -> Iterator[Seeded]:
    with ops_stack(settings, "figures") as stack:
        wait_worker_seen(stack)
        before = stack.wait_quiet()
        work = Work()
        run_pings(stack, work, 5)
        run_searches(stack, work, ok=2, failing=1)
        with webhook_receiver(200) as ok, webhook_receiver(503) as flaky, webhook_receiver(400) as refusing:
            deliveries = make_jobs(stack, work, queued=3, running=1, succeeded=2, failed=1, cancelled=1,
                                   webhook_urls=(ok.url, flaky.url, refusing.url))
            rows = wait_deliveries_settled(stack, deliveries)
        work.webhook_delivered, work.webhook_retried, work.webhook_dead = 1, 1, 1
        add_audit(stack, [
            (AuditEvent("llm_round", model=ROUTER_MODEL, input_tokens=100, output_tokens=20, latency_ms=300), 0),
            (AuditEvent("llm_round", model=ROUTER_MODEL, input_tokens=110, output_tokens=25, latency_ms=450), 0),
            (AuditEvent("llm_round", model=ROUTER_MODEL, input_tokens=120, output_tokens=30, latency_ms=900), 0),
            (AuditEvent("rag_answer", model=ANSWER_MODEL, input_tokens=800, output_tokens=90, latency_ms=2200), 0),
            # outside the 5-minute window, inside the hour; and outside the hour
            (AuditEvent("llm_round", model=ROUTER_MODEL, input_tokens=1000, output_tokens=100), 30 * 60),
            (AuditEvent("llm_round", model=ROUTER_MODEL, input_tokens=5000, output_tokens=500), 3 * 3600),
            (AuditEvent("rate_limit_wait", latency_ms=250), 0),
            (AuditEvent("rate_limit_wait", latency_ms=750), 0),
            (AuditEvent("rate_limit_wait", latency_ms=4000), 2 * 3600),
            (AuditEvent("tool_execution", tool="SearchArticles", outcome="answered", latency_ms=40), 0),
            (AuditEvent("tool_execution", tool="SearchArticles", outcome="answered", latency_ms=60), 0),
            (AuditEvent("tool_execution", tool="AskArticles", outcome="no_results", latency_ms=1500), 0),
        ])
        add_reembed_run(stack, run_id="run-old", batches=1, batch_size=10, completed=1, finish=True,
                        started_s_ago=7200)
        add_reembed_run(stack, run_id="run-now", batches=10, batch_size=20, completed=6, failed=1, started_s_ago=60)
        after = stack.wait_quiet()
        by_url = {ok.url: "delivered", flaky.url: "retried", refusing.url: "dead"}
        urls = dict(stack.run(lambda conn: conn.fetch("SELECT id, url FROM webhook_deliveries")))
        yield Seeded(stack, work, before, after, {by_url[urls[i]]: r for i, r in rows.items()})


def _delta(seeded: Seeded, queue: str, window: str, field: str) -> int:
    q_after = seeded.stack.queue(seeded.after, queue)["windows"][window][field]
    q_before = seeded.stack.queue(seeded.before, queue)["windows"][window][field]
    return int(q_after - q_before)


def _task_delta(seeded: Seeded, queue: str, task: str, state: str) -> int:
    after = seeded.stack.queue(seeded.after, queue)["tasks"].get(task, {}).get(state, 0)
    before = seeded.stack.queue(seeded.before, queue)["tasks"].get(task, {}).get(state, 0)
    return int(after - before)


def test_task_counts_per_queue_are_exact(seeded: Seeded) -> None:
    work = seeded.work
    # The worker's own readiness pings ran before `before`; nothing else runs in this stack.
    assert _task_delta(seeded, "maintenance", "turnout.maintenance.ping", "succeeded") == work.pings
    assert _delta(seeded, "maintenance", "5m", "succeeded") == work.pings
    assert _delta(seeded, "search", "5m", "succeeded") == work.searches_ok
    assert _delta(seeded, "search", "5m", "failed") == work.searches_failed
    assert _task_delta(seeded, "search", "turnout.search.search", "failed") == work.searches_failed
    # Webhooks: one delivered, one failed attempt rescheduled (a retry), one dead-lettered (a failure).
    assert _delta(seeded, "webhooks", "5m", "succeeded") == work.webhook_delivered
    assert _delta(seeded, "webhooks", "5m", "retried") == work.webhook_retried
    assert _delta(seeded, "webhooks", "5m", "failed") == work.webhook_dead
    for window in ("5m", "60m"):
        assert _delta(seeded, "search", window, "retried") == 0
    search = seeded.stack.queue(seeded.after, "search")
    assert search["totals"]["failed"] == work.searches_failed
    five = search["windows"]["5m"]
    assert five["tasksPerMinute"] == pytest.approx((five["succeeded"] + five["failed"] + five["retried"]) / 5, abs=0.01)


def test_latency_percentiles_cover_every_run(seeded: Seeded) -> None:
    search = seeded.stack.queue(seeded.after, "search")["windows"]["5m"]
    ran = search["succeeded"] + search["failed"]
    assert search["runTime"]["count"] == ran
    assert search["queueWait"]["count"] == ran  # every message was stamped when it was sent
    assert 0 < search["runTime"]["p50Ms"] <= search["runTime"]["p95Ms"]
    assert 0 <= search["queueWait"]["p50Ms"] <= search["queueWait"]["p95Ms"]
    hour = seeded.stack.queue(seeded.after, "search")["windows"]["60m"]
    assert hour["runTime"]["count"] >= search["runTime"]["count"]


def test_failures_are_listed_with_the_error(seeded: Seeded) -> None:
    failures = {f["taskId"]: f for f in seeded.after["recentFailures"]}
    for task_id in seeded.work.failed_task_ids:
        entry = failures[task_id]
        assert entry["queue"] == "search" and entry["task"] == "turnout.search.search"
        assert entry["error"].startswith("SearchArgumentError") and "pageSize" in entry["error"]


def test_queue_depth_age_and_consumers(seeded: Seeded) -> None:
    router = seeded.stack.queue(seeded.after, "router")
    assert router["depth"] == len(seeded.work.queued_job_ids)
    assert router["reserved"] == 0
    assert router["oldestMessageAgeS"] is not None and router["oldestMessageAgeS"] >= 0
    assert router["consumers"] == [] and router["consumersAlive"] == 0  # nobody consumes router here
    workers = [w for w in seeded.after["workers"] if w["alive"]]
    assert len(workers) == 1
    assert set(workers[0]["queues"]) == {"search", "webhooks", "maintenance", "rag", "embeddings"}
    assert seeded.stack.worker.proc is not None and workers[0]["pid"] == seeded.stack.worker.proc.pid
    for name in ("search", "webhooks", "maintenance", "rag", "embeddings"):
        q = seeded.stack.queue(seeded.after, name)
        assert q["depth"] == 0 and q["oldestMessageAgeS"] is None
        assert [c["hostname"] for c in q["consumers"]] == [workers[0]["hostname"]]
        assert q["consumersAlive"] == 1


def test_jobs_by_status_are_exact(seeded: Seeded) -> None:
    assert seeded.after["jobs"]["byStatus"] == seeded.work.jobs
    assert seeded.after["jobs"]["total"] == sum(seeded.work.jobs.values())


def test_webhook_deliveries(seeded: Seeded) -> None:
    rows = seeded.deliveries
    assert rows["delivered"]["status"] == "delivered"
    assert rows["retried"]["status"] == "pending" and rows["retried"]["delayed"] and rows["retried"]["attempts"] == 1
    assert rows["dead"]["status"] == "dead"
    hooks = seeded.after["webhooks"]
    assert hooks == {**hooks, "pending": 1, "retrying": 1, "delayed": 1, "delivered": 1, "dead": 1}
    assert hooks["oldestPendingAgeS"] >= 0
    series = seeded.after["series"]
    assert sum(series["webhookDelivered"]) == 1
    assert sum(series["webhookFailed"]) == 2  # the 503 and the 400


def test_llm_calls_and_tokens(seeded: Seeded) -> None:
    llm = seeded.after["llm"]
    five, hour, total = llm["windows"]["5m"], llm["windows"]["60m"], llm["total"]
    assert (five["calls"], five["inputTokens"], five["outputTokens"]) == (4, 1130, 165)
    assert (hour["calls"], hour["inputTokens"], hour["outputTokens"]) == (5, 2130, 265)
    assert (total["calls"], total["inputTokens"], total["outputTokens"], total["totalTokens"]) == (6, 7130, 765, 7895)
    assert five["callsPerMinute"] == pytest.approx(4 / 5)
    assert five["tokensPerMinute"] == pytest.approx(1295 / 5)
    by_model = {(m["kind"], m["model"]): m for m in llm["byModel"]}
    assert by_model[("llm_round", ROUTER_MODEL)]["calls"] == 5
    assert by_model[("llm_round", ROUTER_MODEL)]["calls5m"] == 3
    assert by_model[("rag_answer", ANSWER_MODEL)]["totalTokens"] == 890
    series = seeded.after["series"]
    assert sum(series["llmCalls"]) == hour["calls"]
    assert sum(series["llmInputTokens"]) == hour["inputTokens"]


def test_rate_limiter_waits(seeded: Seeded) -> None:
    limiter = seeded.after["rateLimiter"]
    assert (limiter["waits5m"], limiter["waits60m"], limiter["waitsTotal"]) == (2, 2, 3)
    assert limiter["waitedS5m"] == pytest.approx(1.0)
    assert limiter["waitedSTotal"] == pytest.approx(5.0)
    assert 250 < limiter["p95WaitMs60m"] <= 750


def test_reembed_progress_of_the_latest_run(seeded: Seeded) -> None:
    run = seeded.after["reembed"]
    assert run["id"] == "run-now" and run["status"] == "running"
    assert (run["total"], run["done"], run["failed"]) == (200, 120, 20)
    assert (run["chunksEmbedded"], run["chunksSkipped"]) == (360, 120)
    assert run["progress"] == pytest.approx(140 / 200)
    # 120 localizations done in about a minute: rate and ETA follow from the run's own timestamps.
    assert run["ratePerS"] == pytest.approx(120 / 60, rel=0.2)
    assert run["etaS"] == pytest.approx(60 / run["ratePerS"], rel=0.01)


def test_series_agree_with_the_windows(seeded: Seeded) -> None:
    series = seeded.after["series"]
    assert len(series["minuteStarts"]) == 60
    assert all(b - a == 60 for a, b in zip(series["minuteStarts"], series["minuteStarts"][1:], strict=False))
    for q in seeded.after["queues"]:
        s = series["queues"][q["name"]]
        assert sum(s["succeeded"][-5:]) == q["windows"]["5m"]["succeeded"]
        assert sum(s["failed"]) == q["windows"]["60m"]["failed"]
    router_depth = series["queues"]["router"]["depth"]
    assert router_depth[-1] == len(seeded.work.queued_job_ids)  # the API's own reading is a sample


def test_queues_need_an_admin_key(seeded: Seeded) -> None:
    with seeded.stack.client("") as anonymous:
        assert anonymous.get("/v1/ops/queues").status_code == 401
        assert anonymous.get("/metrics").status_code == 401
    with seeded.stack.client(seeded.stack.user.token) as user:
        response = user.get("/v1/ops/queues")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "forbidden"
        assert user.get("/metrics").status_code == 403


# --------------------------------------------------------------------------- Prometheus


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def _get(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def test_metrics_parse_and_match_the_summary(seeded: Seeded) -> None:
    with seeded.stack.client() as c:
        response = c.get("/metrics")
        summary = c.get("/v1/ops/queues").json()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = _samples(response.text)

    for q in summary["queues"]:
        assert _get(samples, "turnout_queue_depth", queue=q["name"]) == q["depth"]
        assert _get(samples, "turnout_queue_consumers_alive", queue=q["name"]) == q["consumersAlive"]
        for task, states in q["tasks"].items():
            for state, n in states.items():
                assert _get(samples, "turnout_celery_tasks_total", queue=q["name"], task=task, status=state) == n
    for status, n in summary["jobs"]["byStatus"].items():
        assert _get(samples, "turnout_jobs", status=status) == n
    assert _get(samples, "turnout_llm_calls_total", kind="llm_round", model=ROUTER_MODEL) == 5
    assert _get(samples, "turnout_llm_tokens_total", kind="rag_answer", model=ANSWER_MODEL, direction="output") == 90
    assert _get(samples, "turnout_rate_limit_waits_total") == 3
    assert _get(samples, "turnout_rate_limit_wait_seconds_total") == pytest.approx(5.0)
    assert _get(samples, "turnout_webhook_deliveries", status="dead") == 1
    assert _get(samples, "turnout_webhook_deliveries", status="delayed") == 1
    assert _get(samples, "turnout_tool_executions_total", tool="SearchArticles", status="answered") == 2
    assert _get(samples, "turnout_tool_executions_total", tool="AskArticles", status="no_results") == 1
    assert _get(samples, "turnout_reembed_progress_ratio", run="run-now", status="running",
                model="use-multilingual-v3") == pytest.approx(0.7)
    assert _get(samples, "turnout_reembed_done", run="run-now", status="running", model="use-multilingual-v3") == 120


def test_metrics_histograms_are_cumulative_and_complete(seeded: Seeded) -> None:
    with seeded.stack.client() as c:
        text = c.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    runtime = families["turnout_celery_task_runtime_seconds"]
    search = [s for s in runtime.samples if s.labels.get("queue") == "search"]
    buckets = [s for s in search if s.name.endswith("_bucket")]
    count = next(s.value for s in search if s.name.endswith("_count"))
    assert [b.value for b in buckets] == sorted(b.value for b in buckets)
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == count
    totals = seeded.stack.queue(seeded.after, "search")["totals"]
    assert count == totals.get("succeeded", 0) + totals.get("failed", 0)
    tools = [s for s in families["turnout_tool_latency_seconds"].samples if s.labels.get("tool") == "SearchArticles"]
    le = {s.labels["le"]: s.value for s in tools if s.name.endswith("_bucket")}
    assert le["0.025"] == 0 and le["0.05"] == 1 and le["0.1"] == 2 and le["+Inf"] == 2
    assert next(s.value for s in tools if s.name.endswith("_sum")) == pytest.approx(0.1)


# --------------------------------------------------------------------------- the terminal


def _turnout(stack: OpsStack, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **settings_env(stack.settings), "TURNOUT_DATA_DIR": str(stack.data_dir), "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "turnout", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


def test_status_command_prints_the_same_summary(seeded: Seeded) -> None:
    done = _turnout(seeded.stack, "status", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["health"]["status"] in ("ok", "degraded")
    assert doc["summary"]["jobs"]["byStatus"] == seeded.work.jobs
    assert {q["name"]: q["depth"] for q in doc["summary"]["queues"]}["router"] == len(seeded.work.queued_job_ids)
    assert doc["summary"]["webhooks"]["dead"] == 1
    assert doc["summary"]["reembed"]["id"] == "run-now"

    table = _turnout(seeded.stack, "status")
    assert table.returncode == 0, table.stderr
    (ARTIFACTS / "turnout-status.txt").write_text(table.stdout, encoding="utf-8")
    for text in ("turnout status", "router", "search", "webhooks", "dead-lettered 1", "140/200", "20 failed"):
        assert text in table.stdout, table.stdout
