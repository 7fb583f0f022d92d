"""Job listing benchmark: `GET /v1/jobs` pages for a key with 1M jobs (issue 27).

A throwaway database gets the real schema (migrations), then 1,000,000 jobs of one key plus
200,000 of nine others, seeded with `generate_series` (statuses ~90% succeeded, 5% failed, 2%
cancelled, 3% queued/running; three tools and four routings; questions from a 40-word vocabulary,
one word in 1,000 rare; a job every ~second over ~14 days); the listing indexes are built after the
load, as a bulk import would. Then each case pages through `api.job_query.list_page` (the route's
code: filters, keyset SQL, the documents) with 21 rows fetched for 20 shown, at random depths
(a cursor anywhere in the key's history, as a client deep in its pages has):

first page; deep pages; status=failed; status=failed,cancelled; tool; routedBy; a created window;
q with a common and with a rare word; an admin's page over every key. Baseline: the bare keyset
`SELECT id ... ORDER BY created_at DESC, id DESC LIMIT 21` on the same index at the same depths.

Run: ``.venv/bin/python -m bench.job_list_bench`` (PostgreSQL on 127.0.0.1 like the tests).
Writes bench/results/job_list.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from api.job_query import JobListQuery, encode_cursor, list_page
from bench.report import nearest_rank, render_rows, timing_row
from infra.db.api_keys import ApiKey
from infra.db.pool import create_pool
from infra.migrate import upgrade
from tests.support import services

RESULTS = Path(__file__).parent / "results"
TARGET_P95_MS = 20.0
SEED = 20261202
MAIN_KEY, OTHER_KEYS = "bench_main", [f"bench_other_{i}" for i in range(9)]
WORDS = ("ruby rails security release kubernetes docker postgres redis python golang rust java linux kernel "
         "network storage backup upgrade cluster server client browser mobile cloud metrics logs alerts tests "
         "deploy build cache queue search index vector model answer article english").split()
RARE = "zeppelin"  # one question in 1,000
_INDEXES = ("jobs_key_created_id", "jobs_created", "jobs_question_search", "jobs_status_lease", "jobs_finished_at")

_SEED_SQL = """
INSERT INTO jobs (id, api_key_id, status, question, result, source, created_at, updated_at, finished_at)
SELECT 'job_' || md5($1 || i::text), $1,
       s.status,
       ($2::text[])[1 + (i * 7) % cardinality($2::text[])] || ' ' || ($2::text[])[1 + (i * 13) % cardinality($2::text[])] || ' ' || ($2::text[])[1 + (i * 31) % cardinality($2::text[])]
           || CASE WHEN i % 1000 = 0 THEN ' ' || $3 ELSE '' END,
       CASE WHEN s.status = 'succeeded' THEN jsonb_build_object(
           'resultType', 'SearchResult', 'status', 'answered',
           'tool', (ARRAY['SearchArticles', 'AskArticles', 'SearchAndAskArticles'])[1 + i % 3],
           'routedBy', (ARRAY['llm', 'fallback', 'cache', 'caller'])[1 + (i / 3) % 4],
           'articles', jsonb_build_object('totalItems', i % 50)) END,
       CASE WHEN i % 10 = 0 THEN 'mcp' ELSE 'http' END,
       $4::timestamptz - make_interval(secs => i * 1.2), $4::timestamptz - make_interval(secs => i * 1.2),
       CASE WHEN s.status IN ('succeeded', 'failed', 'cancelled') THEN $4::timestamptz - make_interval(secs => i * 1.2) END
FROM generate_series(1, $5) AS i,
     LATERAL (SELECT CASE WHEN i % 100 < 90 THEN 'succeeded' WHEN i % 100 < 95 THEN 'failed'
                          WHEN i % 100 < 97 THEN 'cancelled' WHEN i % 100 < 99 THEN 'queued' ELSE 'running' END
              AS status) AS s
"""


async def load(conn: asyncpg.Connection, main_rows: int, other_rows: int, now: datetime) -> float:
    started = time.perf_counter()
    definitions = [r["indexdef"] for r in await conn.fetch(
        "SELECT indexdef FROM pg_indexes WHERE indexname = ANY($1::text[])", list(_INDEXES))]
    for name in _INDEXES:
        await conn.execute(f"DROP INDEX IF EXISTS {name}")
    await conn.executemany("INSERT INTO api_keys (id, name, key_hash, webhook_secret) VALUES ($1, $1, $1, 's')",
                           [(k,) for k in [MAIN_KEY, *OTHER_KEYS]])
    await conn.execute(_SEED_SQL, MAIN_KEY, list(WORDS), RARE, now, main_rows)
    for key in OTHER_KEYS:
        await conn.execute(_SEED_SQL, key, list(WORDS), RARE, now, other_rows // len(OTHER_KEYS))
    await conn.execute("SET maintenance_work_mem = '256MB'")
    for definition in definitions:
        await conn.execute(definition)
    await conn.execute("VACUUM ANALYZE jobs")
    return time.perf_counter() - started


async def _timed(n: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - started) * 1000)
    return out


async def measure(pool: asyncpg.Pool, n: int, main_rows: int, now: datetime) -> dict[str, list[float]]:
    rng = random.Random(SEED)
    depths = [rng.randrange(1, main_rows) for _ in range(n)]
    cursors = [encode_cursor(now - timedelta(seconds=d * 1.2), "job_~") for d in depths]  # "~" sorts after ids
    user = ApiKey(id=MAIN_KEY, name=MAIN_KEY, is_admin=False, webhook_secret="s")
    admin = ApiKey(id=MAIN_KEY, name=MAIN_KEY, is_admin=True, webhook_secret="s")

    def page(key: ApiKey = user, deep: bool = True, **filters: Any) -> Callable[[int], Awaitable[Any]]:
        async def call(i: int) -> Any:
            query = JobListQuery.model_validate({**filters, **({"cursor": cursors[i]} if deep else {})})
            return await list_page(pool, key, query, base_url=None)
        return call

    async def baseline(i: int) -> None:
        async with pool.acquire() as conn:
            await conn.fetch("SELECT id FROM jobs WHERE api_key_id = $1 AND (created_at, id) < ($2, $3) "
                             "ORDER BY created_at DESC, id DESC LIMIT 21", MAIN_KEY,
                             now - timedelta(seconds=depths[i] * 1.2), "job_~")

    window_start = (now - timedelta(days=3)).isoformat()
    window_end = (now - timedelta(days=2)).isoformat()
    cases: dict[str, Callable[[int], Awaitable[Any]]] = {
        "baseline": baseline,
        "first": page(deep=False),
        "deep": page(),
        "failed": page(status=["failed"]),
        "failed_cancelled": page(status=["failed", "cancelled"]),
        "tool": page(tool="AskArticles"),
        "routed_by": page(routedBy="cache", source="http"),
        "window": page(deep=False, createdAfter=window_start, createdBefore=window_end),
        "q_common": page(deep=False, q="kubernetes"),
        "q_rare": page(deep=False, q=RARE),
        "q_rare_deep": page(q=RARE),
        "admin_all": page(key=admin, deep=False, apiKeyId="*"),
    }
    for call in cases.values():  # warm the caches and the plans
        await _timed(5, call)
    return {name: await _timed(n, call) for name, call in cases.items()}


LABELS = {
    "first": "first page (20 of 1M)", "deep": "page at a random depth", "failed": "status=failed, random depth",
    "failed_cancelled": "status=failed,cancelled, random depth", "tool": "tool=AskArticles, random depth",
    "routed_by": "routedBy=cache + source=http, random depth", "window": "createdAfter/Before one day",
    "q_common": "q=common word (1 in 13)", "q_rare": "q=rare word (1 in 1,000)",
    "q_rare_deep": "q=rare word, random depth", "admin_all": "admin, every key (1.2M)",
}


async def run(dsn: str, n: int, main_rows: int, other_rows: int, *, loaded: bool = False) -> dict[str, Any]:
    now = datetime.now(UTC)
    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            if loaded:  # a database kept by --keep: its newest job is job 1 of the seed
                now = await conn.fetchval("SELECT max(created_at) FROM jobs WHERE api_key_id = $1", MAIN_KEY)
                now += timedelta(seconds=1.2)
            load_s = 0.0 if loaded else await load(conn, main_rows, other_rows, now)
            total = int(await conn.fetchval("SELECT count(*) FROM jobs"))
        print(f"loaded {total} jobs and built the indexes in {load_s:.1f}s", flush=True)
        samples = await measure(pool, n, main_rows, now)
    finally:
        await pool.close()
    base95 = nearest_rank(samples["baseline"], 0.95)
    target = f"p95 <= {TARGET_P95_MS:.0f} ms"
    rows = [timing_row(f"{label} p95", nearest_rank(samples[name], 0.95), base95, target) for name, label in LABELS.items()]
    rows.insert(1, timing_row("page at a random depth p50", nearest_rank(samples["deep"], 0.5), nearest_rank(samples["baseline"], 0.5)))
    rows += [timing_row("baseline keyset SELECT id LIMIT 21 p95", base95, None),
             timing_row(f"load {total} jobs + build indexes", load_s, None, unit="s")]
    return {"name": "job_list", "date": datetime.now(UTC).isoformat(), "rows": rows,
            "details": {"jobs": total, "main_key_jobs": main_rows, "pages_per_case": n,
                        "load_average_1m_at_end": round(os.getloadavg()[0], 2)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000, help="jobs of the measured key")
    parser.add_argument("--others", type=int, default=200_000, help="jobs of nine other keys")
    parser.add_argument("--pages", type=int, default=200, help="pages per case")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway database (prints its name)")
    parser.add_argument("--database", help="measure a database kept by an earlier --keep run (no load)")
    args = parser.parse_args()
    services.require_postgres()
    if args.database:
        result = asyncio.run(run(services.dsn_for(args.database), args.pages, args.jobs, args.others, loaded=True))
        print(render_rows(result, width=52))
        return 0
    name = f"turnout_bench_jobs_{secrets.token_hex(4)}"
    services.create_database(name)
    try:
        dsn = services.dsn_for(name)
        upgrade(dsn)
        result = asyncio.run(run(dsn, args.pages, args.jobs, args.others))
    finally:
        if args.keep:
            print(f"kept database {name}")
        else:
            services.drop_database(name)
    print(render_rows(result, width=52))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "job_list.json").write_text(json.dumps(result, indent=2))
    worst = max(r["value"] for r in result["rows"] if r["target"])
    print(f"worst p95 {worst:.2f} ms {'meets' if worst <= TARGET_P95_MS else 'MISSES'} the {TARGET_P95_MS:.0f} ms target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
