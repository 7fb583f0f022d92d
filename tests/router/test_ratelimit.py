"""The LLM rate limit (`router.ratelimit.LLMRateLimiter`) shared through Redis: waits, the
deadline, and one budget across processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from infra.db.audit import list_audit_events
from infra.settings import Settings
from infra.status import ResultStatus
from router.errors import RoutingFailed
from router.hooks import RunHooks
from router.ratelimit import LLMRateLimiter
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, make_deps, with_limits
from tests.support.llm_server import ScriptedLLM, ToolCall
from tests.support.services import REPO_ROOT

NewJob = Callable[[str], Awaitable[str]]


async def test_a_waiting_job_shows_it_and_audits_the_wait(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob, shared_corpus: object
) -> None:
    limited = with_limits(settings, llm_requests_per_minute=1)
    limiter = LLMRateLimiter.from_settings(limited, bucket=f"wait-{time.monotonic_ns()}", window_s=2)
    deps = make_deps(limited, db, None, rate_limiter=limiter)
    llm.script(ToolCall("SearchArticles", {"text": "Ruby"}), ToolCall("SearchArticles", {"text": "Rails"}))
    await route_question(deps, RouteRequest("Ruby", today=TODAY))

    events: list[tuple[str, dict[str, Any]]] = []

    async def on_event(kind: str, data: dict[str, Any]) -> None:
        events.append((kind, data))

    job = await new_job("Rails")
    result = await route_question(deps, RouteRequest("Rails", job_id=job, today=TODAY), RunHooks(on_event=on_event))
    assert result.status is ResultStatus.ANSWERED
    assert [k for k, _ in events].index("rate_limited") < [k for k, _ in events].index("llm_round")
    [wait] = [e for e in await list_audit_events(db, job) if e.kind == "rate_limit_wait"]
    assert wait.latency_ms is not None and wait.latency_ms > 0


async def test_the_first_calls_permit_is_asked_for_while_the_cache_is_read_and_counted_once(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, redis_client: aioredis.Redis
) -> None:
    limited = with_limits(settings, llm_requests_per_minute=2)
    limiter = LLMRateLimiter.from_settings(limited, bucket=f"prefetch-{time.monotonic_ns()}")
    deps = make_deps(limited, db, redis_client, rate_limiter=limiter, cache=True)
    question = f"Articles about Bundler {time.monotonic_ns()}"  # a cache miss
    llm.script(ToolCall("SearchArticles", {"text": "Bundler"}))
    first = await route_question(deps, RouteRequest(question, today=TODAY))
    assert first.routed_by == "llm" and len(llm.chat_requests) == 1
    assert await limiter.try_acquire(10) is None  # the call took one request of the two, not two
    assert await limiter.try_acquire(10) is not None  # now the minute is used up

    # A cache hit answers without waiting for the (exhausted) limiter, and without the LLM.
    llm.fail_every_call("a cache hit must not call the LLM")
    async with asyncio.timeout(10):
        again = await route_question(deps, RouteRequest(question, today=TODAY))
    assert again.routed_by == "cache" and again.search == first.search


async def test_rate_limit_wait_past_the_deadline_ends_the_job(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    limited = with_limits(settings, llm_requests_per_minute=1, job_deadline_s=1.0)
    limiter = LLMRateLimiter.from_settings(limited, bucket=f"deadline-{time.monotonic_ns()}")
    assert await limiter.try_acquire(10) is None  # the minute's only request is gone
    with pytest.raises(RoutingFailed) as failed:
        await route_question(make_deps(limited, db, None, rate_limiter=limiter), RouteRequest("Ruby", today=TODAY))
    assert failed.value.code == "limit_deadline" and "rate limit" in failed.value.message
    assert llm.chat_requests == []


_PROBE = """
import asyncio, sys, time
from infra.settings import get_settings
from router.ratelimit import LLMRateLimiter

async def main():
    limiter = LLMRateLimiter.from_settings(get_settings(), bucket=sys.argv[1])
    while time.time() < float(sys.argv[2]):
        await asyncio.sleep(0.005)
    granted = 0
    for _ in range(int(sys.argv[3])):
        granted += (await limiter.try_acquire(100)) is None
    print(granted)

asyncio.run(main())
"""


def test_two_router_processes_share_one_limit(settings: Settings) -> None:
    """Two processes race for the same Redis bucket: together they get exactly the limit."""
    bucket = f"shared-{time.monotonic_ns()}"
    env = {**os.environ, "TURNOUT_LIMIT_LLM_REQUESTS_PER_MINUTE": "7"}
    start_at = str(time.time() + 2.0)  # both start hitting at the same instant
    procs = [
        subprocess.Popen([sys.executable, "-c", _PROBE, bucket, start_at, "6"], cwd=REPO_ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    granted = [int(out.strip()) for out, _ in outputs]
    assert sum(granted) == 7, granted  # 12 attempts, one shared budget of 7


async def test_token_budget_per_minute_is_shared_too(settings: Settings) -> None:
    limited = with_limits(settings, llm_tokens_per_minute=1_000)
    bucket = f"tokens-{time.monotonic_ns()}"
    one = LLMRateLimiter.from_settings(limited, bucket=bucket)
    other = LLMRateLimiter.from_settings(limited, bucket=bucket)  # another process's limiter object
    assert await one.try_acquire(600) is None
    wait = await other.try_acquire(600)
    assert wait is not None and wait > 0
    assert await other.try_acquire(300) is None
