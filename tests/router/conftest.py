"""Router fixtures: real Postgres/Redis/Celery, the scripted LLM over real HTTP, real services."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from infra.results import ArticlesPage, NormalizedSearch
from infra.settings import LLMFilters, LLMMode, Settings
from router.engine import OpenAIEngine
from router.executor import AskCall, InProcessExecutor, ToolExecutor
from router.gate import CollectionRelevance
from router.ratelimit import LLMRateLimiter
from router.service import RouterDeps
from router.tools import default_registry

TODAY = date(2026, 9, 15)  # a Tuesday, after the corpus' newest article (2026-08)


def with_limits(settings: Settings, **limits: Any) -> Settings:
    return settings.model_copy(update={"limits": settings.limits.model_copy(update=limits)})


@pytest.fixture
async def redis_client(settings: Settings) -> AsyncIterator[aioredis.Redis]:
    from infra.redis import create_async_redis

    client = create_async_redis(settings)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def new_job(db: asyncpg.Pool) -> Callable[[str], Awaitable[str]]:
    """A real job row, so audit rows can reference it (audit_events.job_id -> jobs)."""
    from infra.db.api_keys import create_key
    from infra.db.jobs import create_job

    async with db.acquire() as conn:
        issued = await create_key(conn, "router-tests")

    async def make(question: str) -> str:
        async with db.acquire() as conn:
            job, _ = await create_job(
                conn, api_key_id=issued.key.id, question=question, answer_language=None, page_size=None,
                webhook_url=None, idempotency_key=None, request_hash="router-test", lease_s=60,
            )
        return job.id

    return make


@dataclass
class RecordingExecutor:
    """Delegates to a real executor and remembers what it was asked to run."""

    inner: ToolExecutor
    searches: list[NormalizedSearch] = field(default_factory=list)
    asks: list[dict[str, Any]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)

    async def search(self, q: NormalizedSearch, *, deadline: float | None = None) -> ArticlesPage:
        self.searches.append(q)
        self.order.append("search")
        return await self.inner.search(q, deadline=deadline)

    async def ask(self, call: AskCall, *, deadline: float | None = None) -> Any:
        self.asks.append({"question": call.question, "language": call.language,
                          "answer_language": call.answer_language,
                          "scope": None if call.scope is None else list(call.scope),
                          "scope_truncated": call.scope_truncated})
        self.order.append("ask")
        return await self.inner.ask(call, deadline=deadline)


def make_deps(
    settings: Settings,
    pool: asyncpg.Pool | None,
    redis: aioredis.Redis | None,
    executor: ToolExecutor | None = None,
    *,
    mode: LLMMode | None = None,
    filters: LLMFilters | None = None,
    llm: bool = True,
    rate_limiter: LLMRateLimiter | None = None,
    cache: bool = False,
    fallback: bool = True,
) -> RouterDeps:
    registry = default_registry()
    assert pool is not None or executor is not None
    return RouterDeps(
        settings=settings,
        pool=pool,
        redis=redis,
        executor=executor or InProcessExecutor(pool),
        engine=OpenAIEngine(settings, registry, mode=mode, filters=filters) if llm else None,
        registry=registry,
        rate_limiter=rate_limiter,
        use_decision_cache=cache,
        fallback_on_llm_error=fallback,
        relevance=CollectionRelevance(pool) if pool is not None else None,  # the request gate's signal
    )
