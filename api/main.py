"""The FastAPI application factory (`uvicorn api.main:create_app --factory`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api.errors import install_error_handlers
from api.mcp.http import mount_mcp
from api.middleware import install_request_limits
from api.routes import ROUTERS
from api.state import AppState
from infra.db.job_listener import JobEventListener
from infra.db.key_cache import ApiKeyCache
from infra.db.pool import create_pool
from infra.redis import create_async_redis
from infra.settings import Settings, get_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    settings.require_services()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = await create_pool(settings.database_url, min_size=1, max_size=10)
        job_events = JobEventListener(settings.database_url)
        api_keys = ApiKeyCache(job_events)  # listens on the same connection
        try:
            await job_events.start()
        except BaseException:
            await pool.close()
            raise
        redis = create_async_redis(settings)
        app.state.turnout = AppState(
            settings=settings, pool=pool, redis=redis, job_events=job_events, api_keys=api_keys
        )
        try:
            async with run_mcp(app.state.turnout):  # the MCP SDK's session manager lives as long as the app
                yield
        finally:
            await job_events.close()
            await redis.aclose()
            await pool.close()

    app = FastAPI(
        title="Turnout",
        version="0.1.0",
        summary="Ask one free-text box about a multilingual article collection; get search results, "
        "cited answers or both, as durable jobs.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    install_request_limits(app, settings)
    for router in ROUTERS:
        app.include_router(router)
    run_mcp = mount_mcp(app, settings)
    return app
