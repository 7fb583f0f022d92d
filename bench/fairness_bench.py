"""Fair shares: key A submits 300 jobs at once, then key B submits one; how long B waits
(submission to final, as its client sees it) against B alone on an idle queue (issue 27: ≤ 2×).

Measured side by side in one run on one stack (router worker 8 threads, front worker 4, a scripted
LLM with a fixed latency per call, so every job takes real time): through an API with the per-key
cap (TURNOUT_JOBS_PER_KEY_IN_FLIGHT, default 4) and through a second API on the same workers with
the cap off (0: the plain FIFO, the before figure). B's one job is submitted right after A's
300 are accepted; its idle wait is the median of three B jobs before the flood. Also reported: how long A's 300 take (the cap's cost to
a key alone), and whether any job was lost or ran twice.

Run: `.venv/bin/python -m bench.fairness_bench [--flood 300 --latency 0.2]` (PostgreSQL and Redis
on 127.0.0.1 like the tests). Writes bench/results/fairness.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import secrets
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

import httpx

from bench.load_bench import FINAL, RESULTS, SEARCH_CALL, plant_articles, row
from bench.report import render_rows

SUBMITTERS = 16  # threads submitting the flood: 300 submissions "at once" (a second or two)
B_SAMPLES = 3  # B jobs alone, for its idle wait (median)
_SERIAL = itertools.count()  # every question its own: a cached decision would skip the LLM's latency


def _submit(client: httpx.Client, priority: str | None = None) -> tuple[str, float]:
    body: dict[str, Any] = {"question": f"docker articles, question {next(_SERIAL)}"}
    if priority:
        body["priority"] = priority
    started = time.perf_counter()
    response = client.post("/v1/questions", json=body)
    response.raise_for_status()
    return str(response.json()["id"]), started


def _wait(client: httpx.Client, job_id: str, *, timeout_s: float = 600.0) -> str:
    give_up = time.monotonic() + timeout_s
    while time.monotonic() < give_up:
        status = str(client.get(f"/v1/jobs/{job_id}", params={"waitS": 20}).json()["status"])
        if status in FINAL:
            return status
    raise RuntimeError(f"job {job_id} not final after {timeout_s:.0f}s")


def b_wait_s(client: httpx.Client) -> float:
    """One B job: submission to final, as its client sees it (long poll)."""
    job_id, started = _submit(client)
    if _wait(client, job_id) != "succeeded":
        raise RuntimeError(f"B's job {job_id} did not succeed")
    return time.perf_counter() - started


def flood(client: httpx.Client, n: int) -> list[str]:
    """`n` submissions from SUBMITTERS threads at once; their ids."""
    ids: list[str] = []
    lock = threading.Lock()
    counter = iter(range(n))

    def submitter() -> None:
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            job_id, _ = _submit(client)
            with lock:
                ids.append(job_id)

    threads = [threading.Thread(target=submitter) for _ in range(SUBMITTERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ids


def measure(api_url: str, token_a: str, token_b: str, *, n: int) -> dict[str, Any]:
    """B alone (idle), then B during A's flood of `n`; A's flood drained and timed."""
    limits = httpx.Limits(max_connections=SUBMITTERS + 4)
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token_a}"}, timeout=60,
                      limits=limits) as a, \
         httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token_b}"}, timeout=60) as b:
        idle = [b_wait_s(b) for _ in range(B_SAMPLES)]
        began = time.perf_counter()
        ids = flood(a, n)
        submitted_s = time.perf_counter() - began
        during = b_wait_s(b)  # B's one job, submitted right after A's flood
        statuses = [_wait(a, job_id) for job_id in ids]
        drained_s = time.perf_counter() - began
    return {"idle_s": idle, "during_s": during, "flood_ids": ids, "flood_submitted_s": submitted_s,
            "flood_drained_s": drained_s, "flood_succeeded": statuses.count("succeeded")}


def lost_or_twice(settings: Any, ids: list[str]) -> list[str]:
    """Jobs not final, final more than once, or started more than once (by their job events)."""
    from tests.api.support import query

    rows = query(settings, """
        SELECT j.id, j.status,
               count(*) FILTER (WHERE e.kind = ANY($2)) AS finals, count(*) FILTER (WHERE e.kind = 'running') AS runs
        FROM jobs j JOIN job_events e ON e.job_id = j.id WHERE j.id = ANY($1) GROUP BY j.id, j.status""",
        ids, list(FINAL))
    fine = {r["id"] for r in rows if r["status"] in FINAL and r["finals"] == 1 and r["runs"] == 1}
    return [job_id for job_id in ids if job_id not in fine]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flood", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per scripted LLM call")
    args = parser.parse_args()

    from infra.settings import Settings
    from tests.api.support import ApiServer, issue_key, stack_settings
    from tests.support import services
    from tests.support.llm_server import Delay, ToolCall
    from tests.support.stack import open_stack

    services.require_postgres()
    services.require_redis()
    base = Settings(database_url=services.dsn_for("unused"), redis_url=services.TEST_REDIS_URL,
                    redis_prefix=f"turnout-bench-fair-{secrets.token_hex(3)}:")
    with open_stack(base, "bench_fair", vector=False, router_threads=8) as stack:
        cap = stack.settings.jobs_per_key_in_flight
        plant_articles(stack.settings)
        stack.llm.on_chat(lambda body: Delay(args.latency, ToolCall("SearchArticles", SEARCH_CALL)))
        fifo_api = ApiServer(stack_settings(stack.settings, jobs_per_key_in_flight=0)).start()
        try:
            token = lambda name: issue_key(stack.settings, name).token  # noqa: E731
            measure(stack.api.base_url, token("warm-a"), token("warm-b"), n=20)  # connections, pools, caches
            fair = measure(stack.api.base_url, token("fair-a"), token("fair-b"), n=args.flood)
            fifo = measure(fifo_api.base_url, token("fifo-a"), token("fifo-b"), n=args.flood)
        finally:
            fifo_api.stop()
        bad = lost_or_twice(stack.settings, fair["flood_ids"] + fifo["flood_ids"])

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    rows = [
        row(f"B's wait during A's {args.flood}-job flood, cap {cap} per key (vs B alone, idle queue)",
            fair["during_s"] * 1000, ms(fair["idle_s"]), "ms", "≤ 2×"),
        row(f"B's wait during A's {args.flood}-job flood, no cap: plain FIFO (vs B alone, idle queue)",
            fifo["during_s"] * 1000, ms(fifo["idle_s"]), "ms", "before"),
        row(f"A's {args.flood} jobs, submission to the last one final, cap {cap} (vs no cap)",
            fair["flood_drained_s"], fifo["flood_drained_s"], "s"),
        row("flood jobs lost, final twice or run twice", float(len(bad)), None, "jobs", "0"),
    ]
    notes = {name: {k: v for k, v in m.items() if k != "flood_ids"} for name, m in (("fair", fair), ("fifo", fifo))}
    result = {"name": "fairness", "date": datetime.now(UTC).isoformat(), "rows": rows,
              "notes": {**notes, "bad": bad[:20], "llm_latency_s": args.latency,
                        "stack": "API (uvicorn, in the bench process; the FIFO API beside it on the same workers), "
                                 "router worker 8 threads, front worker 4 threads, scripted LLM with a fixed latency"}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fairness.json").write_text(json.dumps(result, indent=2))
    print(render_rows(result, width=92))
    print(f"JSON: {RESULTS / 'fairness.json'}")
    fair_ratio = rows[0]["ratio"]
    return 1 if bad or fair_ratio is None or fair_ratio > 2 else 0


if __name__ == "__main__":
    raise SystemExit(main())
