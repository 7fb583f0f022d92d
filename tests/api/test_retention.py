"""Retention (TURNOUT_JOB_RETENTION_DAYS): a seeded history is pruned in small batches, with its
events, audit rows and webhook deliveries; running, queued and recent jobs and a job whose webhook
is still being delivered stay. The beat's task counts what it removed on /metrics."""

from __future__ import annotations

import asyncio
import re
import secrets
from typing import Any

import pytest

from infra.db.pool import create_pool
from infra.db.retention import Pruned, prune_batch
from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, query, wait_until
from workers.app import app_for
from workers.registry import PRUNE_JOBS

RETENTION_DAYS = 30


def _seed(settings: Settings, tag: str, status: str, *, finished_days_ago: float | None, created_days_ago: float = 60,
          delivery: str | None = None) -> str:
    job_id = f"job_{tag}_{secrets.token_hex(4)}"
    query(settings, """
        INSERT INTO jobs (id, status, question, created_at, finished_at)
        VALUES ($1, $2, $3, now() - make_interval(days => $4),
                CASE WHEN $5::float8 IS NULL THEN NULL ELSE now() - make_interval(secs => $5 * 86400) END)
        """, job_id, status, f"retention {tag}", created_days_ago, finished_days_ago)
    query(settings, "INSERT INTO job_events (job_id, kind) VALUES ($1, 'queued'), ($1, $2)", job_id, status)
    query(settings, "INSERT INTO audit_events (job_id, kind) VALUES ($1, 'llm_round')", job_id)
    if delivery is not None:
        rows = query(settings, "INSERT INTO webhook_deliveries (job_id, url, status) VALUES ($1, 'https://h.example', $2) "
                     "RETURNING id", job_id, delivery)
        query(settings, "INSERT INTO webhook_attempts (delivery_id, attempt, status_code) VALUES ($1, 1, 200)",
              rows[0]["id"])
    return job_id


def _left(settings: Settings, ids: list[str]) -> dict[str, tuple[int, int, int]]:
    rows = query(settings, """
        SELECT j.id, (SELECT count(*) FROM job_events e WHERE e.job_id = j.id) AS events,
               (SELECT count(*) FROM audit_events a WHERE a.job_id = j.id) AS audit,
               (SELECT count(*) FROM webhook_deliveries d WHERE d.job_id = j.id) AS deliveries
        FROM jobs j WHERE j.id = ANY($1)""", ids)
    return {r["id"]: (r["events"], r["audit"], r["deliveries"]) for r in rows}


def _prune_all(settings: Settings, batch: int) -> tuple[Pruned, int]:
    async def go() -> tuple[Pruned, int]:
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        total, batches = Pruned(0, 0, 0, 0), 0
        try:
            while True:
                async with pool.acquire() as conn:
                    pruned = await prune_batch(conn, retention_days=RETENTION_DAYS, batch=batch)
                batches += 1
                total = Pruned(total.jobs + pruned.jobs, total.events + pruned.events, total.audit + pruned.audit,
                               total.deliveries + pruned.deliveries)
                if pruned.jobs < batch:
                    return total, batches
        finally:
            await pool.close()

    return asyncio.run(go())


def test_a_seeded_history_is_pruned_and_running_and_recent_jobs_stay(settings: Settings) -> None:
    old = [_seed(settings, "old", status, finished_days_ago=31 + i, delivery="delivered" if i % 2 else None)
           for i, status in enumerate(["succeeded", "failed", "cancelled", "succeeded", "failed", "succeeded", "failed"])]
    kept = [
        _seed(settings, "running", "running", finished_days_ago=None, created_days_ago=90),
        _seed(settings, "queued", "queued", finished_days_ago=None, created_days_ago=90),
        _seed(settings, "recent", "succeeded", finished_days_ago=29, created_days_ago=29.5),
        _seed(settings, "hook", "failed", finished_days_ago=45, delivery="pending"),  # still being delivered
    ]
    before = _left(settings, kept)
    total, batches = _prune_all(settings, batch=2)
    assert _left(settings, old) == {}
    assert query(settings, "SELECT count(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d "
                 "ON d.id = a.delivery_id WHERE d.job_id = ANY($1)", old)[0]["n"] == 0
    assert (total.jobs, total.events, total.audit, total.deliveries) == (7, 14, 7, 3)
    assert batches == 4  # 7 jobs in batches of 2: small statements, each its own transaction
    assert _left(settings, kept) == before


@pytest.mark.usefixtures("celery_worker")
def test_the_beat_task_prunes_and_counts_on_metrics(api: ApiServer, settings: Settings) -> None:
    admin = issue_key(settings, "retention-admin", admin=True)

    def pruned_jobs() -> float:
        with api.client(admin.token) as http:
            text = http.get("/metrics").text
        match = re.search(r'^turnout_retention_pruned_total\{what="jobs"\} (\S+)$', text, re.M)
        return float(match.group(1)) if match else 0.0

    start = pruned_jobs()
    old = [_seed(settings, "beat", "succeeded", finished_days_ago=40) for _ in range(3)]
    outcome: dict[str, Any] = app_for(settings).send_task(PRUNE_JOBS.name, queue=PRUNE_JOBS.queue.value).get(timeout=60)
    assert outcome["jobs"] >= 3 and _left(settings, old) == {}
    wait_until(lambda: pruned_jobs() >= start + 3, timeout=20, what="the pruned jobs counted on /metrics")
