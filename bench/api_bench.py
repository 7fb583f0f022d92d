"""Job API benchmark: LLM-free pages and end-to-end job overhead, each against its in-run baseline.

A throwaway database (the shared corpus loaded), a throwaway Redis key prefix, the real workers
split as `turnout up` runs them (router: 8 threads; search, webhooks, maintenance + beat: 4;
rag, embeddings: 2), the real API as a uvicorn process,
and the scripted LLM answering at once (zero latency). Measured side by side in one run:

- page N from the cache: `infra.pages.load_page` on a hit (key derivation, GET, validation into
  `ArticlesPage`) vs a raw Redis GET + `json.loads` of the same key (target <= 2x);
  also over HTTP: `GET /v1/jobs/{id}/pages/{n}` vs `GET /v1/jobs/{id}` (same auth and job read);
- a job end to end (`POST /v1/questions` with `Prefer: wait=30`: the API stores the job, the
  runner routes it with one LLM round and one search task, writes the result, and the API answers
  the waiting POST when the final event arrives) vs raw round trips through the same hops doing
  the same work: client -> HTTP -> a bare API (bench/relay_api.py) -> router queue -> the same LLM
  call -> `turnout.search.search` -> back -> client (target <= 1.5x: what the job machinery adds);
  also, stricter, the Celery round trip without the HTTP hop, and without the LLM call
  (bench/celery_baseline.py);
- throughput with 3 concurrent clients (the worker's job slots): jobs/s vs round trips/s.

Run: `.venv/bin/python -m bench.api_bench` (PostgreSQL and Redis on 127.0.0.1 like the tests,
or TURNOUT_TEST_ADMIN_DSN / TURNOUT_TEST_REDIS_URL). Writes bench/results/api.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from tests.support import services
from tests.support.llm_server import ScriptedLLM, ToolCall

RESULTS = Path(__file__).parent / "results"
PAGE_TARGET = 2.0
JOB_TARGET = 1.5
CLIENTS = 3  # concurrent clients (the front worker's 4 search threads stay the narrower hop)
WAIT_S = 30  # how long the client lets its POST wait for the job (Prefer: wait=)
RELAY = "bench.relay"
RELAY_LLM = "bench.relay_llm"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


class Stack:
    """Database, prefix, LLM, worker and API of one benchmark run."""

    def __init__(self) -> None:
        run = secrets.token_hex(4)
        self.database = f"turnout_bench_api_{run}"
        self.prefix = f"turnout-bench-api-{run}:"
        self.data_dir = tempfile.mkdtemp(prefix="turnout-bench-api-")
        self.llm = ScriptedLLM().start()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.api_port = 0
        self.relay_port = 0

    def env(self) -> dict[str, str]:
        return {
            "TURNOUT_DATABASE_URL": services.dsn_for(self.database),
            "TURNOUT_REDIS_URL": services.TEST_REDIS_URL,
            "TURNOUT_REDIS_PREFIX": self.prefix,
            "TURNOUT_DATA_DIR": self.data_dir,
            "TURNOUT_LLM_BASE_URL": self.llm.base_url,
            "TURNOUT_LLM_API_KEY": "bench",
            "TURNOUT_LIMIT_SUBMISSIONS_PER_MINUTE": "1000000",
            "TURNOUT_LIMIT_LLM_REQUESTS_PER_MINUTE": "1000000",
            "TURNOUT_LIMIT_LLM_TOKENS_PER_MINUTE": "100000000",
        }

    def start(self) -> None:
        services.require_postgres()
        services.require_redis()
        services.create_database(self.database)
        os.environ.update(self.env())  # before anything reads the settings
        from infra.migrate import upgrade

        upgrade(services.dsn_for(self.database))
        asyncio.run(self._load_corpus())
        # Every request routes to one search, at once: the LLM costs nothing but its round trip.
        self.llm.on_chat(lambda body: ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
        logs = Path(self.data_dir)
        # The worker split of `turnout up` (turnout/embedded/stack.py, tests/support/services.py):
        # routers on threads of their own, search/webhooks/maintenance + beat, rag/embeddings.
        workers = [
            ("router", services.ROUTER_QUEUES, 8, ["--include", "bench.celery_baseline"]),
            ("front", services.FRONT_QUEUES, 4, ["-B", "-s", str(logs / "celerybeat-schedule")]),
            ("vector", services.VECTOR_QUEUES, 2, []),
        ]
        for name, queues, threads, extra in workers:
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", queues,
                 "-c", str(threads), "-P", "threads", "--loglevel", "WARNING", "--without-mingle",
                 "--without-gossip", *extra, "-n", f"bench-{name}-{secrets.token_hex(3)}@%h"],
                cwd=services.REPO_ROOT, env={**os.environ}, stdout=(logs / f"worker-{name}.log").open("wb"),
                stderr=subprocess.STDOUT, start_new_session=True,
            ))
        # The API, and the bare HTTP relay of the baseline (bench/relay_api.py) served alike.
        self.api_port, self.relay_port = _free_port(), _free_port()
        for app, port, log in (("api.main:create_app", self.api_port, "api.log"),
                               ("bench.relay_api:create_app", self.relay_port, "relay-api.log")):
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "uvicorn", app, "--factory", "--host", "127.0.0.1",
                 "--port", str(port), "--log-level", "warning", "--no-access-log"],
                cwd=services.REPO_ROOT, env={**os.environ}, stdout=(logs / log).open("wb"),
                stderr=subprocess.STDOUT, start_new_session=True,
            ))
        self._wait_ready()

    async def _load_corpus(self) -> None:
        from infra.corpus import ArticleRecord, read_corpus
        from infra.db.articles import upsert_records
        from infra.db.pool import create_pool

        records = [r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)]
        pool = await create_pool(services.dsn_for(self.database), min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                await upsert_records(conn, records)
        finally:
            await pool.close()

    def _wait_ready(self) -> None:
        from workers.app import celery_app

        deadline = time.monotonic() + 90
        while True:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise SystemExit(f"a benchmark process exited; logs in {self.data_dir}")
            try:
                celery_app.send_task("bench.relay", args=[SEARCH], queue="router").get(timeout=2)
                httpx.get(f"http://127.0.0.1:{self.api_port}/v1/jobs/x", timeout=2)
                httpx.post(f"http://127.0.0.1:{self.relay_port}/relay", json=SEARCH, timeout=2).raise_for_status()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise SystemExit(f"worker/API not ready in 90s; logs in {self.data_dir}") from None

    def api_key(self) -> str:
        from infra.db.api_keys import create_key
        from infra.db.pool import create_pool

        async def go() -> str:
            pool = await create_pool(services.dsn_for(self.database), min_size=1, max_size=1)
            try:
                async with pool.acquire() as conn:
                    return (await create_key(conn, "bench")).token
            finally:
                await pool.close()

        return asyncio.run(go())

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.llm.stop()
        services.drop_database(self.database)
        services.delete_redis_prefix(self.prefix)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_job(client: httpx.Client, n: int) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    # The submission waits for the end (Prefer: wait, woken by the job's final event); a job still
    # running after it is long-polled.
    response = client.post("/v1/questions", json={"question": f"ruby news, benchmark question {n}"},
                           headers={"Prefer": f"wait={WAIT_S}"})
    response.raise_for_status()
    doc: dict[str, Any] = response.json()
    while True:
        if doc["status"] in ("succeeded", "failed", "cancelled"):
            if doc["status"] != "succeeded":
                raise SystemExit(f"benchmark job {doc['id']} ended {doc['status']}: {doc['error']}")
            return time.perf_counter() - started, doc
        doc = client.get(f"/v1/jobs/{doc['id']}", params={"waitS": WAIT_S}).json()


# The filters every benchmark job's search runs with (what the scripted LLM asks for, normalized).
SEARCH: dict[str, Any] = {"text": "ruby", "language": "en", "dateFrom": None, "dateTo": None, "sort": "newest", "page": 1,
          "pageSize": 20, "adjustments": []}


def relay_http_round_trip(relay: httpx.Client) -> float:
    """The baseline with the job's hops: HTTP to a bare API (bench/relay_api.py), which does the
    raw Celery round trip with the LLM call and answers."""
    started = time.perf_counter()
    page = relay.post("/relay", json=SEARCH).raise_for_status().json()
    assert page["items"], "the baseline search found nothing"
    return time.perf_counter() - started


def relay_round_trip(task: str = RELAY) -> float:
    from workers.app import celery_app

    started = time.perf_counter()
    page = celery_app.send_task(task, args=[SEARCH], queue="router").get(timeout=30)
    assert page["items"], "the baseline search found nothing"
    return time.perf_counter() - started


def closed_loop(work: Callable[[int], object], total: int, clients: int) -> float:
    """`total` operations by `clients` threads, each starting the next when its last one ends; ops/s."""
    counter = iter(range(total))
    lock = threading.Lock()

    def client_loop() -> None:
        while True:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            work(n)

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return total / (time.perf_counter() - started)


async def page_cache_layer(doc: dict[str, Any], page: int, iterations: int) -> tuple[list[float], list[float]]:
    """load_page on a warm key vs raw GET + json.loads of that key, interleaved."""
    from infra.pages import load_page, page_key
    from infra.redis import create_async_redis
    from infra.results import ArticlesPage, NormalizedSearch
    from infra.settings import get_settings

    settings = get_settings()
    redis = create_async_redis(settings)
    search = NormalizedSearch.model_validate(doc["result"]["search"])
    raw_key = page_key(settings, search, page)

    async def never(_: NormalizedSearch) -> ArticlesPage:
        raise AssertionError("the page must come from the cache")

    async def everything(ids: list[str]) -> set[str]:  # the visibility lookup (one PK query) is not timed here
        return set(ids)

    assert await redis.get(raw_key) is not None, "page not cached"
    layer: list[float] = []
    raw: list[float] = []
    try:
        for _ in range(iterations):
            started = time.perf_counter()
            source = (await load_page(redis, settings, search, page, fetch=never, visible=everything)).source
            layer.append(time.perf_counter() - started)
            assert source == "cache"
            started = time.perf_counter()
            json.loads(await redis.get(raw_key))
            raw.append(time.perf_counter() - started)
    finally:
        await redis.aclose()
    return layer, raw


def row(metric: str, value: float, baseline: float | None, target: str, unit: str) -> dict[str, Any]:
    return {"metric": metric, "value": round(value, 3), "baseline": None if baseline is None else round(baseline, 3),
            "ratio": None if not baseline else round(value / baseline, 2), "target": target, "unit": unit}


@dataclass
class _Samples:
    job_s: list[float] = field(default_factory=list)
    http_base_s: list[float] = field(default_factory=list)
    llm_base_s: list[float] = field(default_factory=list)
    base_s: list[float] = field(default_factory=list)
    rates: dict[str, float] = field(default_factory=dict)  # jobs/s and each baseline's round trips/s
    layer: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    http_page: list[float] = field(default_factory=list)
    http_job: list[float] = field(default_factory=list)
    llm_calls: int = 0


def _measure_jobs(client: httpx.Client, relay: httpx.Client, args: argparse.Namespace, out: _Samples) -> None:
    for n in range(5):  # warm-up: connections, pools, caches on every path
        run_job(client, -1 - n)
        relay_http_round_trip(relay)
        relay_round_trip(RELAY)
        relay_round_trip(RELAY_LLM)
    for n in range(args.jobs):  # interleaved, so load drifts hit all alike
        out.job_s.append(run_job(client, n)[0])
        out.http_base_s.append(relay_http_round_trip(relay))
        out.llm_base_s.append(relay_round_trip(RELAY_LLM))
        out.base_s.append(relay_round_trip(RELAY))
    out.rates = {
        "job": closed_loop(lambda n: run_job(client, 10_000 + n), args.batch, CLIENTS),
        "http": closed_loop(lambda n: relay_http_round_trip(relay), args.batch, CLIENTS),
        "llm": closed_loop(lambda n: relay_round_trip(RELAY_LLM), args.batch, CLIENTS),
        "base": closed_loop(lambda n: relay_round_trip(RELAY), args.batch, CLIENTS),
    }


def _measure_pages(client: httpx.Client, args: argparse.Namespace, out: _Samples) -> None:
    _, doc = run_job(client, 99_999)
    job_id = doc["id"]
    assert doc["result"]["search"] == SEARCH, doc["result"]["search"]  # both paths ran the same search
    page = min(2, doc["result"]["articles"]["totalPages"])
    client.get(f"/v1/jobs/{job_id}/pages/{page}").raise_for_status()  # fills the cache (a miss)
    out.layer, out.raw = asyncio.run(page_cache_layer(doc, page, args.page_iterations))
    for _ in range(args.http_iterations):
        started = time.perf_counter()
        assert client.get(f"/v1/jobs/{job_id}/pages/{page}").json()["source"] == "cache"
        out.http_page.append(time.perf_counter() - started)
        started = time.perf_counter()
        client.get(f"/v1/jobs/{job_id}").raise_for_status()
        out.http_job.append(time.perf_counter() - started)


def _measure(args: argparse.Namespace) -> _Samples:
    out = _Samples()
    stack = Stack()
    try:
        stack.start()
        headers = {"Authorization": f"Bearer {stack.api_key()}"}
        with (
            httpx.Client(base_url=f"http://127.0.0.1:{stack.api_port}", headers=headers, timeout=30) as client,
            httpx.Client(base_url=f"http://127.0.0.1:{stack.relay_port}", timeout=30) as relay,
        ):
            _measure_jobs(client, relay, args, out)
            _measure_pages(client, args, out)
            out.llm_calls = len(stack.llm.chat_requests)
    finally:
        stack.stop()
    return out


def _rows(m: _Samples) -> list[dict[str, Any]]:
    us, ms = 1e6, 1e3
    med = statistics.median
    return [
        row("page N from cache p50 (cache layer vs raw GET+decode)", med(m.layer) * us,
            med(m.raw) * us, f"<= {PAGE_TARGET:g}x", "us"),
        row("page N from cache p95 (cache layer vs raw GET+decode)", percentile(m.layer, 0.95) * us,
            percentile(m.raw, 0.95) * us, "", "us"),
        row("page N over HTTP p50 (vs GET /v1/jobs/{id})", med(m.http_page) * ms, med(m.http_job) * ms, "", "ms"),
        row("job end to end p50 (vs HTTP + round trip with the LLM call)", med(m.job_s) * ms,
            med(m.http_base_s) * ms, f"<= {JOB_TARGET:g}x", "ms"),
        row("job end to end p95 (vs HTTP + round trip with the LLM call)", percentile(m.job_s, 0.95) * ms,
            percentile(m.http_base_s, 0.95) * ms, "", "ms"),
        row("job end to end p50 (vs round trip with the LLM call)", med(m.job_s) * ms,
            med(m.llm_base_s) * ms, "", "ms"),
        row("job end to end p50 (vs round trip, search only)", med(m.job_s) * ms, med(m.base_s) * ms, "", "ms"),
        row(f"throughput, {CLIENTS} clients (jobs/s vs HTTP + LLM round trips/s)", m.rates["job"],
            m.rates["http"], "", "per s"),
        row(f"throughput, {CLIENTS} clients (jobs/s vs LLM round trips/s)", m.rates["job"], m.rates["llm"], "",
            "per s"),
        row(f"throughput, {CLIENTS} clients (jobs/s vs round trips/s)", m.rates["job"], m.rates["base"], "",
            "per s"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100, help="sequential jobs (and round trips) for latency")
    parser.add_argument("--batch", type=int, default=45, help="jobs (and round trips) for throughput")
    parser.add_argument("--page-iterations", type=int, default=2000)
    parser.add_argument("--http-iterations", type=int, default=300)
    args = parser.parse_args()

    samples = _measure(args)
    rows = _rows(samples)
    result = {"name": "api", "date": datetime.now(UTC).isoformat(), "rows": rows,
              "notes": {"sequential_jobs": args.jobs, "throughput_batch": args.batch, "llm_calls": samples.llm_calls,
                        "client_wait": f"Prefer: wait={WAIT_S} on the POST"}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "api.json").write_text(json.dumps(result, indent=2))
    header = f"{'metric':<58} {'value':>10} {'baseline':>10} {'ratio':>7}  target"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['metric'] + ' (' + r['unit'] + ')':<58} {r['value']:>10.2f} {r['baseline']:>10.2f} "
              f"{r['ratio']:>6.2f}x  {r['target']}")
    print(f"JSON: {RESULTS / 'api.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
