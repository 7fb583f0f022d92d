"""An isolated stack for operations tests, and the work the tests create in it.

Own database, own Redis prefix (so task statistics start empty), one real worker and the
real API on loopback. The worker consumes every queue but `router`, so jobs sent to the
router stay in flight (queued, visible in the router queue's depth) for as long as a test
looks at them. Job, audit, webhook and re-embedding rows are written with the owning
modules' writers; only back-dating timestamps is test-data SQL here.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx
from celery import Celery

from infra.db import reembed as reembed_db
from infra.db.api_keys import IssuedKey
from infra.db.audit import AuditEvent, insert_audit_events
from infra.db.jobs import cancel_job, claim_job, create_job, finish_job
from infra.db.pool import create_pool
from infra.results import NormalizedSearch
from infra.settings import Settings
from infra.status import JobStatus
from tests.api.support import (
    ApiServer,
    issue_key,
    stack_settings,
    start_worker,
    throwaway_database,
    wait_until,
)
from tests.support import services
from tests.support.services import WorkerProcess

T = TypeVar("T")

WORKER_QUEUES = "search,webhooks,maintenance,rag,embeddings"  # not router: jobs stay in flight
# A failed webhook's next attempt is scheduled this far out (no countdown message is sent past
# 300 s and this stack runs no sweeper), so a "delayed" delivery stays delayed during the tests.
WEBHOOK_RETRY_SCHEDULE_S = (3000.0,)


@dataclass
class OpsStack:
    settings: Settings
    api: ApiServer
    worker: WorkerProcess
    admin: IssuedKey
    user: IssuedKey
    celery: Celery
    data_dir: Path

    def client(self, token: str | None = None) -> httpx.Client:
        return self.api.client(self.admin.token if token is None else token)

    def summary(self) -> dict[str, Any]:
        with self.client() as c:
            response = c.get("/v1/ops/queues")
        assert response.status_code == 200, response.text
        doc: dict[str, Any] = response.json()
        return doc

    def run(self, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        async def go() -> T:
            pool = await create_pool(self.settings.database_url, min_size=1, max_size=1)
            try:
                async with pool.acquire() as conn:
                    return await fn(conn)
            finally:
                await pool.close()

        return asyncio.run(go())

    def queue(self, summary: dict[str, Any], name: str) -> dict[str, Any]:
        found: dict[str, Any] = next(q for q in summary["queues"] if q["name"] == name)
        return found

    def wait_quiet(self, timeout: float = 30.0) -> dict[str, Any]:
        """Until no consumed queue has waiting or unacknowledged messages; returns that summary."""
        consumed = set(WORKER_QUEUES.split(","))

        def quiet() -> dict[str, Any] | None:
            doc = self.summary()
            busy = [q for q in doc["queues"] if q["name"] in consumed and (q["depth"] or q["reserved"])]
            return None if busy else doc

        result: dict[str, Any] = wait_until(quiet, timeout=timeout, what="the stack's queues to drain")
        return result


@contextmanager
def ops_stack(base: Settings, name: str) -> Iterator[OpsStack]:
    with throwaway_database(f"ops_{name}") as dsn:
        prefix = f"{base.redis_prefix}ops-{name}-{secrets.token_hex(3)}:"
        data_dir = Path(tempfile.mkdtemp(prefix=f"turnout-ops-{name}-"))
        settings = stack_settings(base, database_url=dsn, redis_prefix=prefix, data_dir=data_dir,
                                  webhook_retry_schedule_s=WEBHOOK_RETRY_SCHEDULE_S)
        worker = start_worker(settings, WORKER_QUEUES, beat=False, concurrency=2, env={
            "TURNOUT_DATA_DIR": str(data_dir), "TURNOUT_WEBHOOK_RETRY_SCHEDULE_S": json.dumps(WEBHOOK_RETRY_SCHEDULE_S),
        })
        api: ApiServer | None = None
        from workers.app import create_celery

        celery = create_celery(settings)
        try:
            api = ApiServer(settings).start()
            stack = OpsStack(settings, api, worker, issue_key(settings, "ops-admin", admin=True),
                             issue_key(settings, "ops-user"), celery, data_dir)
            yield stack
        finally:
            if api is not None:
                api.stop()
            worker.stop()
            celery.close()
            services.delete_redis_prefix(prefix)
            shutil.rmtree(data_dir, ignore_errors=True)


# --------------------------------------------------------------------------- the work


@dataclass
class Work:
    """What a test did, so it can assert the exact figures."""

    pings: int = 0
    searches_ok: int = 0
    searches_failed: int = 0
    failed_task_ids: list[str] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in JobStatus})
    queued_job_ids: list[str] = field(default_factory=list)
    webhook_delivered: int = 0
    webhook_retried: int = 0
    webhook_dead: int = 0


def run_pings(stack: OpsStack, work: Work, n: int) -> None:
    results = [stack.celery.send_task("turnout.maintenance.ping", queue="maintenance") for _ in range(n)]
    for r in results:
        assert r.get(timeout=30)["pong"] is True
    work.pings += n


def run_searches(stack: OpsStack, work: Work, ok: int, failing: int) -> None:
    good = [stack.celery.send_task("turnout.search.search", args=[NormalizedSearch(text=f"ops {i}").wire()],
                                   queue="search") for i in range(ok)]
    # A page size no caller may ask for: the real task refuses it (SearchArgumentError).
    bad = [stack.celery.send_task("turnout.search.search", args=[NormalizedSearch(page_size=10_000).wire()],
                                  queue="search") for _ in range(failing)]
    for r in good:
        assert r.get(timeout=30)["page"] == 1
    for r in bad:
        r.get(timeout=30, propagate=False)
        assert r.failed(), r.result
        work.failed_task_ids.append(r.id)
    work.searches_ok += ok
    work.searches_failed += failing


def make_jobs(stack: OpsStack, work: Work, *, queued: int, running: int, succeeded: int, failed: int,
              cancelled: int, webhook_urls: tuple[str, ...] = ()) -> list[int]:
    """Jobs in each status; jobs with a webhook URL end failed and their deliveries are sent."""
    from workers.dispatch import send_run_job, send_webhook

    async def go(conn: asyncpg.Connection) -> tuple[list[str], list[int]]:
        async def new(webhook_url: str | None = None) -> str:
            job, _ = await create_job(conn, api_key_id=stack.user.key.id, question="ops figures", answer_language=None,
                                      page_size=None, webhook_url=webhook_url, idempotency_key=None,
                                      request_hash=secrets.token_hex(8), lease_s=86_400.0)
            return job.id

        async def finish(job_id: str, status: JobStatus) -> int | None:
            claimed = await claim_job(conn, job_id, lease_s=86_400.0)
            assert claimed is not None
            done = await finish_job(
                conn, job_id, attempt=claimed.attempts, status=status,  # type: ignore[arg-type]
                result=None, error={"code": "limit_max_rounds", "message": "test"} if status == JobStatus.FAILED else None,
                usage={},
            )
            assert done is not None
            return done.delivery_id

        queued_ids = [await new() for _ in range(queued)]
        for _ in range(running):
            assert await claim_job(conn, await new(), lease_s=86_400.0) is not None
        for _ in range(succeeded):
            await finish(await new(), JobStatus.SUCCEEDED)
        for _ in range(failed):
            await finish(await new(), JobStatus.FAILED)
        for _ in range(cancelled):
            outcome, _ = await cancel_job(conn, await new(), api_key_id=stack.user.key.id)
            assert outcome == "cancelled"
        deliveries = []
        for url in webhook_urls:
            delivery = await finish(await new(url), JobStatus.FAILED)
            assert delivery is not None
            deliveries.append(delivery)
        return queued_ids, deliveries

    queued_ids, deliveries = stack.run(go)
    for job_id in queued_ids:
        assert send_run_job(stack.celery, stack.settings, job_id)
    for delivery_id in deliveries:
        assert send_webhook(stack.celery, stack.settings, delivery_id)
    work.queued_job_ids += queued_ids
    for status, n in (("queued", queued), ("running", running), ("succeeded", succeeded),
                      ("failed", failed + len(webhook_urls)), ("cancelled", cancelled)):
        work.jobs[status] += n
    return deliveries


def wait_deliveries_settled(stack: OpsStack, delivery_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Until every delivery had its first attempt recorded; returns the rows by id."""

    def settled() -> dict[int, dict[str, Any]] | None:
        # One statement, one snapshot: an attempt row and its delivery's new state commit together.
        rows = stack.run(lambda conn: conn.fetch(
            "SELECT d.id, d.status, d.attempts, d.next_attempt_at > now() AS delayed, "
            "EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempted "
            "FROM webhook_deliveries d WHERE d.id = ANY($1::bigint[])", delivery_ids))
        if len(rows) != len(delivery_ids) or not all(r["attempted"] for r in rows):
            return None
        return {r["id"]: dict(r) for r in rows}

    result: dict[int, dict[str, Any]] = wait_until(settled, timeout=40, what="webhook attempts")
    return result


def add_audit(stack: OpsStack, events: list[tuple[AuditEvent, float]]) -> None:
    """Audit rows through the router's writer; (event, age in seconds) back-dates `created_at`."""

    async def go(conn: asyncpg.Connection) -> None:
        for event, age_s in events:
            before = await conn.fetchval("SELECT coalesce(max(id), 0) FROM audit_events")
            await insert_audit_events(conn, [event])
            if age_s:
                await conn.execute("UPDATE audit_events SET created_at = now() - make_interval(secs => $2) "
                                   "WHERE id > $1", before, age_s)

    stack.run(go)


def add_reembed_run(stack: OpsStack, *, run_id: str, batches: int, batch_size: int, completed: int, failed: int = 0,
                    finish: bool = False, started_s_ago: float = 60.0) -> None:
    """A run written through the re-embedding module's own writers; `completed` batches each embed
    three chunks per localization and copy one unchanged; the start is back-dated (test-data SQL)."""

    async def go(conn: asyncpg.Connection) -> None:
        ids = [f"{run_id}-loc-{i}" for i in range(batches * batch_size)]
        await reembed_db.create_run(
            conn, run_id=run_id, model="use-multilingual-v3", dimension=512, collection=f"turnout_chunks_{run_id}",
            source_collection=None, scope={},
            batches=[("embed", ids[b * batch_size:(b + 1) * batch_size]) for b in range(batches)],
        )
        await reembed_db.mark_running(conn, run_id)
        for b in range(completed):
            assert await reembed_db.complete_batch(conn, run_id, b, localizations=batch_size,
                                                   embedded=3 * batch_size, copied=batch_size)
        for b in range(completed, completed + failed):
            await reembed_db.fail_batch(conn, run_id, b, localizations=batch_size, error="embeddings endpoint down")
        if finish:
            assert await reembed_db.finish_run(conn, run_id)
        await conn.execute("UPDATE reembed_runs SET started_at = now() - make_interval(secs => $2) WHERE id = $1",
                           run_id, started_s_ago)

    stack.run(go)


def wait_worker_seen(stack: OpsStack, timeout: float = 20.0) -> dict[str, Any]:
    """Until the stack's worker has a heartbeat entry (written at worker_ready, every 2 s after)."""

    def seen() -> dict[str, Any] | None:
        doc = stack.summary()
        return doc if any(w["alive"] for w in doc["workers"]) else None

    result: dict[str, Any] = wait_until(seen, timeout=timeout, what="a worker heartbeat")
    return result
