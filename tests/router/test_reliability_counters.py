"""LLM trouble is visible to operators (issue 16, item 7): every LLM attempt is counted by outcome,
every retry, every fallback by reason and every rate-limiter wait that got a permit or gave up;
the counts reach Redis with a flush and come out of /metrics (api/metrics.py) and the ops
summary. Real route_question, scripted LLM over HTTP, real Redis and Postgres."""

from __future__ import annotations

import time

import asyncpg
import pytest
import redis.asyncio as aioredis
from prometheus_client.parser import text_string_to_metric_families

from api.metrics import render
from api.ops import gather_ops, reliability_summary
from infra import counters
from infra.settings import Settings
from router.errors import RoutingFailed
from router.ratelimit import LLMRateLimiter
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, make_deps, with_limits
from tests.support.llm_server import Delay, HttpError, ScriptedLLM, ToolCall

pytestmark = pytest.mark.usefixtures("shared_corpus")

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def _samples(db: asyncpg.Pool, redis: aioredis.Redis, settings: Settings) -> Samples:
    await counters.flush(redis, settings)
    text = render(await gather_ops(db, redis, settings)).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    k = (name, tuple(sorted(labels.items())))
    return after.get(k, 0.0) - before.get(k, 0.0)


async def test_llm_outcomes_retries_and_fallbacks_are_counted(
    llm: ScriptedLLM, settings: Settings, own_counters: Settings, db: asyncpg.Pool,
    redis_client: aioredis.Redis
) -> None:
    one_retry = settings.model_copy(update={"llm_max_retries": 1})
    before = await _samples(db, redis_client, own_counters)

    llm.script(HttpError(500, "down"), HttpError(500, "down"))  # both attempts fail: the fallback routes
    first = await route_question(make_deps(one_retry, db, None), RouteRequest("Ruby", today=TODAY))
    llm.script(HttpError(429, "slow down", {"Retry-After": "0"}), ToolCall("SearchArticles", {"text": "Ruby"}))
    second = await route_question(make_deps(one_retry, db, None), RouteRequest("Ruby", today=TODAY))
    llm.script(HttpError(400, "bad request"))
    third = await route_question(make_deps(one_retry, db, None), RouteRequest("Ruby", today=TODAY))
    llm.script(Delay(5, ToolCall("SearchArticles", {"text": "Ruby"})), Delay(5, ToolCall("SearchArticles", {})))
    fourth = await route_question(make_deps(with_limits(one_retry, llm_call_timeout_s=0.5), db, None),
                                  RouteRequest("Ruby", today=TODAY))
    assert [r.routed_by for r in (first, second, third, fourth)] == ["fallback", "llm", "fallback", "fallback"]

    after = await _samples(db, redis_client, own_counters)
    outcomes = {o: _delta(before, after, "turnout_llm_call_outcomes_total", kind="route", outcome=o)
                for o in ("ok", "429", "5xx", "timeout", "rejected")}
    assert outcomes == {"ok": 1, "429": 1, "5xx": 2, "timeout": 2, "rejected": 1}, outcomes
    assert _delta(before, after, "turnout_llm_retries_total", kind="route") == 3  # 500, 429, timeout
    assert _delta(before, after, "turnout_router_fallbacks_total", reason="llm_unavailable") == 2
    assert _delta(before, after, "turnout_router_fallbacks_total", reason="llm_rejected") == 1

    summary = reliability_summary(await gather_ops(db, redis_client, own_counters))
    assert summary.llm_calls["route"]["5xx"] >= 2 and summary.fallbacks["llm_rejected"] >= 1


async def test_every_rate_limiter_give_up_is_counted(
    llm: ScriptedLLM, settings: Settings, own_counters: Settings, db: asyncpg.Pool,
    redis_client: aioredis.Redis
) -> None:
    limited = with_limits(settings, llm_requests_per_minute=1, job_deadline_s=1.0)
    before = await _samples(db, redis_client, own_counters)
    for n in range(3):
        limiter = LLMRateLimiter.from_settings(limited, bucket=f"give-up-{n}-{time.monotonic_ns()}")
        assert await limiter.try_acquire(10) is None  # the minute's only request is gone
        with pytest.raises(RoutingFailed):
            await route_question(make_deps(limited, db, None, rate_limiter=limiter), RouteRequest("Ruby", today=TODAY))
    after = await _samples(db, redis_client, own_counters)
    assert _delta(before, after, "turnout_rate_limiter_outcomes_total", outcome="gave_up") == 3
    assert llm.chat_requests == []
