"""Durability drills: a worker killed with SIGKILL mid-job, and a Redis restart that loses every
queued message. Both must end with every accepted job finished exactly once: one final
status, one result, one webhook POST.

The stack is private (own database, own redis-server, own front worker with the sweeper in
beat) so the drills can kill things without touching the session's services. Its lease and
sweep interval are seconds, not minutes, through settings."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.support import (
    ApiServer,
    RedisServer,
    WebhookReceiver,
    issue_key,
    load_articles,
    query,
    stack_settings,
    start_worker,
    throwaway_database,
    wait_for_job,
    wait_until,
    webhook_receiver,
)
from tests.support import services
from tests.support.llm_server import Delay, ScriptedLLM, ToolCall

pytestmark = pytest.mark.slow

LEASE_ENV = {"TURNOUT_JOB_LEASE_S": "3", "TURNOUT_JOB_SWEEP_INTERVAL_S": "1"}
FRONT = "router,search,webhooks,maintenance"


@dataclass
class Stack:
    settings: Settings
    redis: RedisServer
    api: ApiServer
    worker: services.WorkerProcess

    def restart_worker(self) -> None:
        self.worker = start_worker(self.settings, FRONT, beat=True, env=LEASE_ENV)


@pytest.fixture(scope="module")
def stack(settings: Settings, test_environment: None) -> Iterator[Stack]:
    redis = RedisServer().start()
    with throwaway_database("durable") as dsn:
        # No fair-share cap: every job submitted here has its message in Redis (none is parked).
        own = stack_settings(settings, database_url=dsn, redis_url=redis.url, job_lease_s=3.0,
                             job_sweep_interval_s=1.0, jobs_per_key_in_flight=0)
        load_articles(own)
        worker = start_worker(own, FRONT, beat=True, env=LEASE_ENV)
        api = ApiServer(own).start()
        s = Stack(own, redis, api, worker)
        try:
            yield s
        finally:
            api.stop()
            s.worker.stop()
            redis.stop()


def _slow_search(seconds: float) -> Any:
    return lambda body: Delay(seconds, ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))


def _submit_many(c: httpx.Client, n: int, receiver: WebhookReceiver, tag: str) -> list[str]:
    ids = []
    for i in range(n):
        response = c.post("/v1/questions", json={"question": f"ruby news {tag} {i}", "webhookUrl": receiver.url})
        assert response.status_code == 202, response.text
        ids.append(response.json()["id"])
    return ids


def _assert_each_finished_once(stack: Stack, c: httpx.Client, key: IssuedKey, receiver: WebhookReceiver,
                               job_ids: list[str]) -> list[dict[str, Any]]:
    docs = [wait_for_job(c, job_id, timeout=90) for job_id in job_ids]
    # each job's status, attempts and error only: the whole documents are cut short in a report
    assert [d["status"] for d in docs] == ["succeeded"] * len(job_ids), \
        [(d["status"], d["attempts"], d["error"]) for d in docs]
    assert all(d["result"]["resultType"] == "SearchResult" and d["result"]["articles"]["items"] for d in docs)
    finals = query(stack.settings, "SELECT job_id, count(*) AS n FROM job_events WHERE job_id = ANY($1) "
                   "AND kind IN ('succeeded', 'failed', 'cancelled') GROUP BY job_id", job_ids)
    assert {r["job_id"]: r["n"] for r in finals} == dict.fromkeys(job_ids, 1)
    deliveries = query(stack.settings, "SELECT job_id, status FROM webhook_deliveries WHERE job_id = ANY($1)", job_ids)
    assert sorted(r["job_id"] for r in deliveries) == sorted(job_ids)
    wait_until(lambda: all(receiver.for_job(j) for j in job_ids), timeout=30, what="every webhook")
    for job_id in job_ids:
        [hook] = receiver.for_job(job_id)  # exactly one POST per job
        assert hook.json()["type"] == "job.succeeded" and hook.json()["data"]["status"] == "succeeded"
    return docs


def test_worker_killed_mid_job(stack: Stack, llm: ScriptedLLM) -> None:
    llm.on_chat(_slow_search(3.0))
    key = issue_key(stack.settings, "kill")
    with webhook_receiver(200) as receiver, stack.api.client(key.token) as c:
        job_ids = _submit_many(c, 3, receiver, "kill")
        # Every job is inside its LLM call and claimed: running, with its result not yet written.
        # (Routing starts beside the claim, so an LLM request alone does not prove the claim.)
        def statuses() -> set[str]:
            return {c.get(f"/v1/jobs/{j}").json()["status"] for j in job_ids}

        wait_until(lambda: len(llm.chat_requests) >= 3 and statuses() == {"running"}, timeout=30,
                   what="three claimed jobs mid-LLM-call")
        try:
            stack.worker.kill()  # SIGKILL the whole worker (beat included): nothing gets to clean up
            assert statuses() == {"running"}
        finally:
            stack.restart_worker()  # the next drill needs a worker even when this one fails
        docs = _assert_each_finished_once(stack, c, key, receiver, job_ids)
    assert all(d["attempts"] == 2 for d in docs), [d["attempts"] for d in docs]
    for job_id in job_ids:
        kinds = [r["kind"] for r in query(stack.settings, "SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id",
                                          job_id)]
        assert kinds[:2] == ["queued", "running"] and "requeued" in kinds and kinds.count("running") == 2


def test_redis_restart_loses_every_message(stack: Stack, llm: ScriptedLLM) -> None:
    """Jobs mid-LLM-call and jobs whose messages wait in Redis (the worker is frozen with SIGSTOP
    so it cannot fetch them) when Redis dies and comes back empty."""
    llm.on_chat(_slow_search(2.0))
    key = issue_key(stack.settings, "redis")
    with webhook_receiver(200) as receiver, stack.api.client(key.token) as c:
        running = _submit_many(c, 2, receiver, "redis-running")
        wait_until(lambda: len(llm.chat_requests) >= 2, timeout=30, what="two jobs mid-LLM-call")
        worker = stack.worker.proc
        assert worker is not None
        os.killpg(worker.pid, signal.SIGSTOP)
        try:
            waiting = _submit_many(c, 3, receiver, "redis-waiting")  # their messages sit in Redis
            stack.redis.kill()  # the queue, the unacked messages, results, caches: all gone
            stack.redis.start()
        finally:
            os.killpg(worker.pid, signal.SIGCONT)
        _assert_each_finished_once(stack, c, key, receiver, running + waiting)
    requeued = query(stack.settings, "SELECT DISTINCT job_id FROM job_events WHERE kind = 'requeued' "
                     "AND job_id = ANY($1)", waiting)
    # The sweeper re-sent the lost messages. (The frozen worker's pending BRPOP may already have
    # taken one message into its socket buffer: that one was not lost.)
    assert len({r["job_id"] for r in requeued}) >= len(waiting) - 1
