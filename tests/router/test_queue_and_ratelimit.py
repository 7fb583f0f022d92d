"""The queue executor on real workers (search + RAG), and the LLM rate limit shared through Redis."""

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
from infra.db.pool import DatabaseUnavailable
from infra.settings import Settings
from infra.status import ResultStatus, ResultType
from router.errors import RoutingFailed
from router.hooks import RunHooks
from router.ratelimit import LLMRateLimiter
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, RecordingExecutor, make_deps, with_limits
from tests.support.cut_connections import LOCK_LOCALIZATIONS, terminate_blocked_reads
from tests.support.llm_server import ScriptedLLM, Text, ToolCall
from tests.support.services import REPO_ROOT
from workers._db_retry import DB_ATTEMPTS
from workers.executor import QueueExecutor

NewJob = Callable[[str], Awaitable[str]]
# The router asks the articles; the answer model answers from them.
ASK_YJIT = (
    ToolCall("AskArticles", {"question": "What is YJIT?", "language": "en"}),
    Text("YJIT is a just-in-time compiler for Ruby [1].", prompt_tokens=700, completion_tokens=40),
)


async def test_ask_tool_runs_on_the_rag_worker(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, indexed_ids: list[str], new_job: NewJob
) -> None:
    llm.script(*ASK_YJIT)
    executor = RecordingExecutor(QueueExecutor())
    job = await new_job("What is YJIT?")
    result = await route_question(
        make_deps(settings, db, None, executor), RouteRequest("What is YJIT?", job_id=job, today=TODAY)
    )
    assert result.result_type is ResultType.ANSWER and result.status is ResultStatus.ANSWERED
    assert result.answer_kind == "llm" and result.answer is not None and "just-in-time" in result.answer
    assert result.answer_language == "en" and result.sources
    # Other suites may index more of the corpus in the same session: check the filter, not the ids.
    assert all(s.language in (None, "en") for s in result.sources)
    assert executor.order == ["ask"] and executor.asks[0]["scope"] is None
    # Router round + the RAG answer call, both in the job's usage.
    assert result.usage.llm_calls == 2 and result.usage.input_tokens == 120 + 700
    rag_request = llm.chat_requests[1]
    assert "tools" not in rag_request  # the answer model is offered no tools
    kinds = [e.kind for e in await list_audit_events(db, job)]
    assert kinds[0] == "llm_round" and kinds[-1] == "tool_execution"
    assert "rag_answer" in kinds  # written by the RAG worker for the answer call, under the same job


async def test_a_search_that_cannot_reach_the_database_fails_the_round_as_an_outage_not_a_tool_fault(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, celery_worker: object, new_job: NewJob
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "YJIT", "language": "en"}))
    job = await new_job("YJIT articles")
    deps = make_deps(settings, db, None, QueueExecutor())
    async with db.acquire() as lock_holder, lock_holder.transaction():
        await lock_holder.execute(LOCK_LOCALIZATIONS)  # each attempt of the search task is cut mid-statement
        routing = asyncio.ensure_future(route_question(deps, RouteRequest("YJIT articles", job_id=job, today=TODAY)))
        assert await asyncio.wait_for(terminate_blocked_reads(db, routing, times=DB_ATTEMPTS), 30) == DB_ATTEMPTS
        with pytest.raises(DatabaseUnavailable):  # not RoutingFailed(tool_failed): the runner re-queues the job
            await asyncio.wait_for(routing, 60)
    [execution] = [e for e in await list_audit_events(db, job) if e.kind == "tool_execution"]
    assert execution.outcome == "error" and execution.error is not None and "PostgreSQL unreachable" in execution.error


async def test_a_rag_answer_whose_connection_is_cut_runs_again_on_a_new_one(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, indexed_ids: list[str], new_job: NewJob
) -> None:
    llm.script(*ASK_YJIT)
    job = await new_job("What is YJIT?")
    deps = make_deps(settings, db, None, QueueExecutor())
    async with db.acquire() as lock_holder, lock_holder.transaction():
        await lock_holder.execute(LOCK_LOCALIZATIONS)  # the answer's read of its sources waits, and is cut
        routing = asyncio.ensure_future(route_question(deps, RouteRequest("What is YJIT?", job_id=job, today=TODAY)))
        assert await asyncio.wait_for(terminate_blocked_reads(db, routing, times=1), 30) == 1
    result = await asyncio.wait_for(routing, 60)
    assert result.status is ResultStatus.ANSWERED and result.answer_kind == "llm" and result.sources
    assert len(llm.chat_requests) == 2  # the router round and one answer call: the retry came before it


async def test_search_and_ask_scopes_rag_to_the_page(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, indexed_ids: list[str], new_job: NewJob
) -> None:
    llm.script(
        ToolCall("SearchAndAskArticles", {"text": "YJIT", "language": "en", "question": "How did YJIT get faster?"}),
        Text("It got faster through better code generation [1].", prompt_tokens=600, completion_tokens=30),
    )
    executor = RecordingExecutor(QueueExecutor())
    job = await new_job("Find YJIT articles and explain how it got faster")
    req = RouteRequest("Find YJIT articles and explain how it got faster", job_id=job, page_size=5, today=TODAY)
    result = await route_question(make_deps(settings, db, None, executor), req)

    assert executor.order == ["search", "ask"]
    [search] = executor.searches
    assert (search.page, search.page_size, search.text, search.language) == (1, 5, "YJIT", "en")
    assert result.articles is not None
    page_ids = [item.id for item in result.articles.items]
    assert set(page_ids) & set(indexed_ids)  # the page the fixture indexed (give or take other suites' rows)
    [ask] = executor.asks
    assert ask["scope"] == page_ids and ask["language"] == "en"
    assert ask["scope_truncated"] is (result.articles.total_items > 5) is True
    assert result.result_type is ResultType.COMBINED and result.status is ResultStatus.ANSWERED
    assert result.coverage_limited is True
    assert result.sources and {s.article_id for s in result.sources} <= set(page_ids)
    assert result.search is not None and result.question == "How did YJIT get faster?"
    trail = await list_audit_events(db, job)
    [execution] = [e for e in trail if e.kind == "tool_execution"]
    assert execution.tool == "SearchAndAskArticles" and execution.outcome == "answered"
    assert execution.normalized_arguments is not None and execution.normalized_arguments["pageSize"] == 5


async def test_combined_with_an_empty_page_never_asks_rag(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, celery_worker: object, shared_corpus: object
) -> None:
    llm.script(
        ToolCall("SearchAndAskArticles", {"text": "qqxyzzy", "question": "What is qqxyzzy?"}),
        Text("NO_TOOL: nothing matches"),
    )
    executor = RecordingExecutor(QueueExecutor())
    result = await route_question(make_deps(settings, db, None, executor), RouteRequest("qqxyzzy?", today=TODAY))
    assert executor.order == ["search"]
    assert result.status is ResultStatus.NO_RESULTS and result.result_type is ResultType.COMBINED


# ---- the shared rate limit ----

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
