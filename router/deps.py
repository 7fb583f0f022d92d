"""`RouterDeps`: what a routing run is wired to (settings, stores, the tool executor, the LLM
engine and its rate limiter, the gate's relevance signal, the key budgets)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg
import redis.asyncio as aioredis

from infra.budgets import SpendLedger
from infra.settings import Settings
from router.engine import Engine, OpenAIEngine
from router.executor import ToolExecutor
from router.gate import CollectionRelevance, Relevance
from router.gateway import check_wired
from router.ratelimit import LLMRateLimiter
from router.readiness import ReadinessProbe
from router.tools import ToolRegistry, default_registry


@dataclass
class RouterDeps:
    settings: Settings
    pool: asyncpg.Pool | None  # None only for the eval harness: audit kept in memory
    redis: aioredis.Redis | None  # None: no decision cache
    executor: ToolExecutor
    engine: Engine | None  # None = degraded mode (no LLM configured)
    registry: ToolRegistry = field(default_factory=default_registry)
    rate_limiter: LLMRateLimiter | None = None
    use_decision_cache: bool = True
    fallback_on_llm_error: bool = True  # the eval harness turns it off to measure the model alone
    # The local llama-server profile: is the model serving yet? (None: always assumed ready.)
    llm_ready: Callable[[], Awaitable[bool]] | None = None
    # The request gate's relevance signal (None: the gate's rules only, e.g. an eval without a database).
    relevance: Relevance | None = None
    # The per-key budgets each LLM call of a job is reserved from (None: not accounted, e.g. the eval).
    spend: SpendLedger | None = None

    @classmethod
    def for_settings(cls, settings: Settings, *, pool: asyncpg.Pool | None, redis: aioredis.Redis | None,
                     executor: ToolExecutor, spend: SpendLedger | None = None) -> RouterDeps:
        """The production wiring: the LLM engine when one is configured, its rate limiter; fails
        on configuration errors (tool names, URLs)."""
        registry = default_registry()
        check_wired(registry)
        engine = OpenAIEngine(settings, registry) if settings.llm_configured else None
        return cls(
            settings=settings, pool=pool, redis=redis, executor=executor, engine=engine, registry=registry,
            rate_limiter=LLMRateLimiter.from_settings(settings) if engine is not None else None,
            llm_ready=ReadinessProbe(settings.llm_ready_url) if engine is not None and settings.llm_ready_url else None,
            relevance=CollectionRelevance.for_settings(pool, settings) if pool is not None else None, spend=spend,
        )
