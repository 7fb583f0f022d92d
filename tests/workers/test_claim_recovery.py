"""A job message is never dropped on a transient failure before the claim (issue 24).

- The router worker's pooled connections die while it is idle (its backends terminated, as a
  PostgreSQL restart leaves them): the next job's claim meets a dead connection and is claimed
  again on a fresh one within seconds, not after the lease (300 s here).
- A queued job whose message was lost (its row exists, no message was ever sent) is sent again
  by the sweeper two sweep intervals later, not after the lease.

The stack is private (own database, own key prefix, a router-only worker with one thread so the
job meets the connection that was cut, a front worker with the sweeper) and its lease is long."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psutil
import pytest

from infra.db import jobs as jobs_db
from infra.db.pool import create_pool
from infra.settings import Settings
from tests.api.support import (
    ApiServer,
    issue_key,
    load_articles,
    query,
    settings_env,
    stack_settings,
    start_worker,
    throwaway_database,
    wait_for_job,
    wait_until,
)
from tests.support import services
from tests.support.llm_server import ScriptedLLM, ToolCall

pytestmark = pytest.mark.slow

LEASE_S = 300.0
SWEEP_S = 1.0
ENV = {"TURNOUT_JOB_LEASE_S": str(LEASE_S), "TURNOUT_JOB_SWEEP_INTERVAL_S": str(SWEEP_S)}
SEARCH = ToolCall("SearchArticles", {"text": "ruby", "language": "en"})


@dataclass
class Stack:
    settings: Settings
    api: ApiServer
    router: services.WorkerProcess


@pytest.fixture(scope="module")
def stack(settings: Settings, test_environment: None) -> Iterator[Stack]:
    with throwaway_database("claim") as dsn:
        own = stack_settings(settings, database_url=dsn, redis_prefix=settings.redis_prefix + "claim:",
                             job_lease_s=LEASE_S, job_sweep_interval_s=SWEEP_S)
        load_articles(own)
        front = start_worker(own, "search,webhooks,maintenance", beat=True, env=ENV)
        router = services.WorkerProcess(queues="router", concurrency=1, env=settings_env(own, **ENV))
        router.start(wait_ready=False)
        api = ApiServer(own).start()
        try:
            wait_until(lambda: " ready." in router.log_text(), timeout=60, what="the router worker")
            yield Stack(own, api, router)
        finally:
            api.stop()
            router.stop()
            front.stop()


def _cut_connections(stack: Stack) -> int:
    """Terminate the router worker's PostgreSQL backends (found by its sockets' ports)."""
    assert stack.router.proc is not None
    ports = [c.laddr.port for c in psutil.Process(stack.router.proc.pid).net_connections(kind="tcp")
             if c.raddr and c.raddr.port == 5432]
    assert ports, "the router worker holds no pooled connection"
    rows = query(stack.settings, "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity "
                 "WHERE datname = current_database() AND client_port = ANY($1::int[])", ports)
    return sum(1 for r in rows if r["ok"])


def test_claim_on_a_dead_connection_is_claimed_again_within_seconds(stack: Stack, llm: ScriptedLLM) -> None:
    llm.on_chat(lambda body: SEARCH)
    key = issue_key(stack.settings, "claim")
    with stack.api.client(key.token) as c:
        warm = c.post("/v1/questions", json={"question": "ruby news, warm-up"}).json()["id"]
        assert wait_for_job(c, warm, timeout=60)["status"] == "succeeded"  # the worker's pool is open
        assert _cut_connections(stack) >= 1
        time.sleep(0.5)  # the backends are gone; the idle worker has not looked at its sockets
        submitted = time.monotonic()
        job_id = c.post("/v1/questions", json={"question": "ruby news after the cut"}).json()["id"]
        doc = wait_for_job(c, job_id, timeout=30)
        took = time.monotonic() - submitted
    assert doc["status"] == "succeeded", doc
    # Claimed by its own message, within seconds: before the sweeper would have re-sent it
    # (2 sweeps + 5 s) and long before the lease.
    assert took < 2 * SWEEP_S + 5, took
    kinds = [r["kind"] for r in query(stack.settings, "SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id",
                                      job_id)]
    assert kinds.count("running") == 1 and "requeued" not in kinds, kinds


def test_a_lost_message_is_sent_again_by_the_sweeper_within_seconds(stack: Stack, llm: ScriptedLLM) -> None:
    llm.on_chat(lambda body: SEARCH)
    key = issue_key(stack.settings, "lost")

    async def row_without_message() -> str:
        pool = await create_pool(stack.settings.database_url, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                job, _ = await jobs_db.create_job(
                    conn, api_key_id=key.key.id, question="ruby news, message lost", answer_language=None,
                    page_size=None, webhook_url=None, idempotency_key=None, request_hash="lost", lease_s=LEASE_S,
                )
            return job.id
        finally:
            await pool.close()

    created = time.monotonic()
    job_id = asyncio.run(row_without_message())
    with stack.api.client(key.token) as c:
        doc = wait_for_job(c, job_id, timeout=30)
    took = time.monotonic() - created
    assert doc["status"] == "succeeded", doc
    assert 2 * SWEEP_S < took < 3 * SWEEP_S + 5 + 10, took  # one grace period and a sweep, plus the run
    reasons = [r["data"]["reason"] for r in query(
        stack.settings, "SELECT data FROM job_events WHERE job_id = $1 AND kind = 'requeued'", job_id)]
    assert reasons == ["message lost (not claimed in time)"], reasons


async def test_a_claim_that_cannot_reach_postgresql_sends_the_message_back(settings: Settings) -> None:
    """PostgreSQL out of reach at the claim (nothing listens on the port), also after retries:
    `ClaimUnreachable`, on which `run_job` re-sends its message instead of letting it be acked."""
    from workers import _runtime
    from workers.tasks import jobs as runner

    down = stack_settings(settings, database_url="postgresql://postgres@127.0.0.1:1/turnout")
    rt = _runtime.Runtime(settings=down, loop=asyncio.get_running_loop())
    try:
        with pytest.raises(runner.ClaimUnreachable, match="PostgreSQL unreachable over 3 attempts"):
            await runner.execute_job(rt, "job_unreachable")
    finally:
        await rt.aclose()
