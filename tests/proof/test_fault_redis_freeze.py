"""A frozen Redis (SIGSTOP of a private redis-server this test starts): the process is there,
its port accepts, nothing answers. Every Redis client of the request path has connect/read
timeouts, so the API answers within 5 s - 503 + Retry-After where Redis is needed (submission:
the rate limiter and the queue), 200 where it is only a cache (pages fall back to the search) -
and after SIGCONT submissions are accepted and run again; nothing accepted is lost."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from infra.redis import READ_TIMEOUT_S
from infra.settings import Settings
from tests.api.support import (
    ApiServer,
    RedisServer,
    issue_key,
    load_articles,
    query,
    stack_settings,
    start_worker,
    throwaway_database,
    wait_until,
)
from tests.proof.conftest import DRILL_ENV, SEARCH_RUBY, TaggedLLM, assert_final_once, submit, wait_final

pytestmark = pytest.mark.slow

ANSWER_WITHIN_S = 5.0
# No request waits on the frozen Redis twice: one client timeout (2 s), and the rest of its work.
ONE_REDIS_WAIT_S = READ_TIMEOUT_S + 1.5


@contextlib.contextmanager
def _report_if_slow(api: ApiServer, what: str) -> Iterator[None]:
    """Print what the in-process API is waiting on when `what` has not answered in time: a hang
    past the client's timeout then says where it was."""

    def report() -> None:
        print(f"\n{what}: no answer after {ANSWER_WITHIN_S + 1:g}s\n{api.dump_tasks()}", file=sys.stderr, flush=True)

    timer = threading.Timer(ANSWER_WITHIN_S + 1, report)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@pytest.fixture
def frozen_redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()  # SIGKILL reaches a stopped process too


def test_frozen_redis_answers_within_5s(frozen_redis: RedisServer, settings: Settings, tagged: TaggedLLM) -> None:
    for tag in ("freeze-before", "freeze-after"):
        tagged.on(tag, lambda n, body: SEARCH_RUBY)
    with throwaway_database("freeze") as dsn:
        own = stack_settings(settings, database_url=dsn, redis_url=frozen_redis.url, job_lease_s=3.0,
                             job_sweep_interval_s=1.0)
        load_articles(own)
        token = issue_key(own, "freeze").token
        worker = start_worker(own, "router,search,webhooks,maintenance", beat=True, env=DRILL_ENV)
        api = ApiServer(own).start()
        answered: Counter[str] = Counter()
        slowest = 0.0
        try:
            with api.client(token) as c:
                before = [submit(c, f"find ruby news [drill:freeze-before] {i}") for i in range(3)]
                assert all(d["status"] == "succeeded" for d in wait_final(c, before).values())
                assert frozen_redis.proc is not None
                os.kill(frozen_redis.proc.pid, signal.SIGSTOP)
                try:
                    for i in range(4):
                        for method, path, body in [
                            ("POST", "/v1/questions", {"question": f"find ruby news [drill:freeze-lost] {i}"}),
                            ("GET", f"/v1/jobs/{before[0]}", None),
                            ("GET", f"/v1/jobs/{before[1]}/pages/2", None),
                            ("GET", "/v1/ops/health", None),
                        ]:
                            started = time.monotonic()
                            with _report_if_slow(api, f"{method} {path}"):
                                response = c.request(method, path, json=body)
                            took = time.monotonic() - started
                            slowest = max(slowest, took)
                            answered[f"{method} {path.split('/')[2]}{'/pages' if 'pages' in path else ''} "
                                     f"{response.status_code}"] += 1
                            assert took < min(ANSWER_WITHIN_S, ONE_REDIS_WAIT_S), (method, path, took, response.text)
                            if method == "POST" or path.endswith("health"):
                                assert response.status_code == 503, (path, response.text)
                                assert int(response.headers["Retry-After"]) > 0
                            else:  # PostgreSQL holds jobs; the page cache is an optimisation
                                assert response.status_code == 200, (path, response.text)
                finally:
                    os.kill(frozen_redis.proc.pid, signal.SIGCONT)
                thawed = time.monotonic()
                wait_until(lambda: c.get("/v1/ops/health").status_code == 200, timeout=30, what="health")
                recovered_s = time.monotonic() - thawed
                after = [submit(c, f"find ruby news [drill:freeze-after] {i}") for i in range(3)]
                docs = wait_final(c, before + after, timeout=60)
        finally:
            api.stop()
            worker.stop()
        print(f"\nredis freeze drill: {dict(answered)}; slowest answer {slowest:.2f}s; "
              f"recovered {recovered_s:.1f}s after SIGCONT")
        assert_final_once(own, docs, webhook=False)
        assert all(d["status"] == "succeeded" for d in docs.values()), docs
        assert sorted(r["id"] for r in query(own, "SELECT id FROM jobs")) == sorted(before + after)


def test_a_send_to_a_frozen_broker_gives_up_within_seconds(frozen_redis: RedisServer, settings: Settings) -> None:
    """The API's producer (what `POST /v1/questions` sends with, after the job row is stored)
    fails a send to a frozen Redis within seconds instead of hanging; the sweeper sends it later."""
    from workers.dispatch import create_producer, send_run_job

    own = stack_settings(settings, redis_url=frozen_redis.url)
    producer = create_producer(own)
    try:
        assert send_run_job(producer, own, "job_probe_warm")  # a warm connection, as in a running API
        assert frozen_redis.proc is not None
        os.kill(frozen_redis.proc.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            sent = send_run_job(producer, own, "job_probe_frozen")
            took = time.monotonic() - started
        finally:
            os.kill(frozen_redis.proc.pid, signal.SIGCONT)
        assert not sent and took < 10.0, took
    finally:
        producer.close()

