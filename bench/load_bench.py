"""Load: N concurrent clients submitting questions and waiting for them to end, for a bounded
time, against the real API and real worker processes, with a scripted LLM that answers at once.

Each client is a closed loop: POST /v1/questions, long-poll GET /v1/jobs/{id}?waitS= until final, repeat
until the time is up (the last job is still awaited). Reported: accepted, finished, failed,
refused submissions, p50/p95 end-to-end latency, jobs/s, and whether anything was lost (every
accepted job is in the database, final, with exactly one final job event).

In-run baseline: the same number of client threads doing raw Celery round trips of the same
search (`turnout.search.search` on the `search` queue, what each job's tool call runs), for the
same time: throughput and latency without the API, job state, routing, LLM or audit.

Run: `.venv/bin/python -m bench.load_bench [--clients 16 --seconds 30]` (PostgreSQL and Redis
on 127.0.0.1 like the tests, or TURNOUT_TEST_ADMIN_DSN / TURNOUT_TEST_REDIS_URL). A throwaway
database and Redis prefix; writes bench/results/load.json. The correctness half of this is
tests/proof/test_load.py.
"""

from __future__ import annotations

import argparse
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

RESULTS = Path(__file__).parent / "results"
FINAL = ("succeeded", "failed", "cancelled")
WAIT_S = 10  # each long poll's wait (GET /v1/jobs/{id}?waitS=); the client's timeout is longer
JOB_TIMEOUT_S = 120.0
# What the scripted LLM asks for in every job, and the baseline's search (normalized).
SEARCH_CALL: dict[str, Any] = {"text": "docker", "language": "en"}
SEARCH_NORMALIZED: dict[str, Any] = {**SEARCH_CALL, "dateFrom": None, "dateTo": None, "sort": "newest", "page": 1,
                                     "pageSize": 20, "adjustments": []}


@dataclass
class LoadReport:
    clients: int
    seconds: float  # wall time, the last jobs' wait included
    accepted: list[str] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)  # status codes of submissions not accepted
    final: dict[str, str] = field(default_factory=dict)  # job id -> final status, as the client saw it
    latencies_s: list[float] = field(default_factory=list)  # accepted -> seen final, per finished job
    unfinished: list[str] = field(default_factory=list)  # still not final after JOB_TIMEOUT_S

    @property
    def finished(self) -> int:
        return sum(1 for s in self.final.values() if s == "succeeded")

    @property
    def failed(self) -> int:
        return sum(1 for s in self.final.values() if s != "succeeded")

    def summary(self) -> dict[str, Any]:
        return {
            "clients": self.clients, "seconds": round(self.seconds, 2), "accepted": len(self.accepted),
            "finished": self.finished, "failed": self.failed, "refused": len(self.refused),
            "unfinished": len(self.unfinished), "jobs_per_s": round(len(self.final) / self.seconds, 2),
            "p50_ms": round(percentile(self.latencies_s, 0.5) * 1000, 1),
            "p95_ms": round(percentile(self.latencies_s, 0.95) * 1000, 1),
        }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_load(base_url: str, tokens: list[str], *, clients: int, seconds: float) -> LoadReport:
    """`clients` threads, each submitting and long-polling in a closed loop for `seconds`, client
    n with key n (the clients of a service are its keys: one key's jobs in flight are capped by
    the fair shares, TURNOUT_JOBS_PER_KEY_IN_FLIGHT)."""
    report = LoadReport(clients=clients, seconds=0.0)
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client_loop(n: int) -> None:
        headers = {"Authorization": f"Bearer {tokens[n % len(tokens)]}"}
        with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
            k = 0
            while time.monotonic() < stop_at:
                k += 1
                started = time.perf_counter()
                response = client.post("/v1/questions", json={"question": f"docker articles, client {n} job {k}"})
                if response.status_code != 202:
                    with lock:
                        report.refused.append(response.status_code)
                    continue
                job_id = response.json()["id"]
                with lock:
                    report.accepted.append(job_id)
                give_up = time.monotonic() + JOB_TIMEOUT_S
                while True:
                    status = client.get(f"/v1/jobs/{job_id}", params={"waitS": WAIT_S}).json()["status"]
                    if status in FINAL:
                        with lock:
                            report.final[job_id] = status
                            report.latencies_s.append(time.perf_counter() - started)
                        break
                    if time.monotonic() > give_up:
                        with lock:
                            report.unfinished.append(job_id)
                        break

    began = time.perf_counter()
    _in_threads(client_loop, clients)
    report.seconds = time.perf_counter() - began
    return report


def celery_round_trips(app: Any, *, clients: int, seconds: float) -> tuple[float, list[float]]:
    """The baseline: raw round trips of the jobs' search through Celery; (per second, latencies)."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client_loop(_: int) -> None:
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            page = app.send_task("turnout.search.search", args=[SEARCH_NORMALIZED], queue="search").get(timeout=30)
            assert page["items"], "the baseline search found nothing"
            with lock:
                latencies.append(time.perf_counter() - started)

    began = time.perf_counter()
    _in_threads(client_loop, clients)
    return len(latencies) / (time.perf_counter() - began), latencies


def _in_threads(work: Callable[[int], None], n: int) -> None:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:  # a client that dies must fail the run, not vanish
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def lost_jobs(settings: Any, report: LoadReport) -> list[str]:
    """Accepted jobs that are missing, not final, or final more than once (by their job events)."""
    from tests.api.support import query

    rows = query(
        settings,
        """SELECT j.id, j.status,
                  (SELECT count(*) FROM job_events e WHERE e.job_id = j.id AND e.kind = ANY($2)) AS finals
           FROM jobs j WHERE j.id = ANY($1)""",
        report.accepted, list(FINAL),
    )
    by_id = {r["id"]: r for r in rows}
    return [job_id for job_id in report.accepted
            if job_id not in by_id or by_id[job_id]["status"] not in FINAL or by_id[job_id]["finals"] != 1
            or report.final.get(job_id) != by_id[job_id]["status"]]


def script_search(llm: Any) -> None:
    """Every routing request calls the same search at once (a zero-latency model)."""
    from tests.support.llm_server import ToolCall

    llm.on_chat(lambda body: ToolCall("SearchArticles", SEARCH_CALL))


def plant_articles(settings: Any) -> None:
    import asyncio

    from infra.db.articles import upsert_records
    from infra.db.pool import create_pool
    from tests.proof.planted import planted_records

    async def go() -> None:
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                await upsert_records(conn, planted_records()[0])
        finally:
            await pool.close()

    asyncio.run(go())


def row(metric: str, value: float, baseline: float | None, unit: str, target: str = "") -> dict[str, Any]:
    return {"metric": metric, "value": round(value, 3), "baseline": None if baseline is None else round(baseline, 3),
            "ratio": None if not baseline else round(value / baseline, 2), "target": target, "unit": unit}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--baseline-seconds", type=float, default=15.0)
    args = parser.parse_args()

    from infra.settings import Settings
    from tests.api.support import issue_key
    from tests.support import services
    from tests.support.stack import open_stack
    from workers.app import create_celery

    services.require_postgres()
    services.require_redis()
    base = Settings(database_url=services.dsn_for("unused"), redis_url=services.TEST_REDIS_URL,
                    redis_prefix=f"turnout-bench-load-{secrets.token_hex(3)}:")
    with open_stack(base, "bench_load", vector=False, router_threads=8) as stack:
        plant_articles(stack.settings)
        script_search(stack.llm)
        tokens = [issue_key(stack.settings, f"load-bench-{n}").token for n in range(args.clients)]
        app = create_celery(stack.settings)
        try:
            celery_round_trips(app, clients=2, seconds=2)  # warm-up: connections, pools, imports
            run_load(stack.api.base_url, tokens, clients=2, seconds=2)
            report = run_load(stack.api.base_url, tokens, clients=args.clients, seconds=args.seconds)
            lost = lost_jobs(stack.settings, report)
            base_rate, base_lat = celery_round_trips(app, clients=args.clients, seconds=args.baseline_seconds)
        finally:
            app.close()

    summary = report.summary()
    rows = [
        row(f"throughput, {args.clients} clients (jobs/s vs raw Celery search round trips/s)",
            summary["jobs_per_s"], base_rate, "per s"),
        row("job end to end p50 under load (vs round trip p50)", summary["p50_ms"],
            percentile(base_lat, 0.5) * 1000, "ms"),
        row("job end to end p95 under load (vs round trip p95)", summary["p95_ms"],
            percentile(base_lat, 0.95) * 1000, "ms"),
        row("accepted jobs lost or final more than once", float(len(lost)), None, "jobs", "0"),
    ]
    result = {"name": "load", "date": datetime.now(UTC).isoformat(), "rows": rows,
              "notes": {**summary, "lost": lost[:20], "baseline_round_trips": len(base_lat),
                        "client_wait": f"long poll, waitS={WAIT_S}",
                        "stack": "API (uvicorn, in the bench process), router worker 8 threads, "
                                 "front worker 4 threads, scripted LLM with zero latency"}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "load.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(summary))
    header = f"{'metric':<76} {'value':>9} {'baseline':>9} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        base_txt = "" if r["baseline"] is None else f"{r['baseline']:.2f}"
        ratio_txt = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['metric'] + ' (' + r['unit'] + ')':<76} {r['value']:>9.2f} {base_txt:>9} {ratio_txt:>7}")
    print(f"JSON: {RESULTS / 'load.json'}")
    return 1 if lost or report.unfinished else 0


if __name__ == "__main__":
    raise SystemExit(main())
