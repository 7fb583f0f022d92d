"""`turnout mcp`: the MCP server over stdio, for a local host that starts it as a subprocess.

The API key comes from the environment (`TURNOUT_API_KEY`), checked once at start-up: every call
of this process is that key's (its jobs, its submission limit). The same tools and resources as
the HTTP endpoint; stdout carries only MCP messages (logs go to stderr).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from api.mcp.server import Caller, TurnoutMCP, client_of
from api.state import AppState
from infra.db.job_listener import JobEventListener
from infra.db.key_cache import ApiKeyCache
from infra.db.pool import create_pool
from infra.redis import create_async_redis
from infra.settings import ConfigError, Settings, get_settings

KEY_ENV = "TURNOUT_API_KEY"


@asynccontextmanager
async def open_state(settings: Settings) -> AsyncIterator[AppState]:
    """The resources the API opens at start-up (api/main.py), for this process."""
    pool = await create_pool(settings.database_url, min_size=1, max_size=4)
    job_events = JobEventListener(settings.database_url)
    api_keys = ApiKeyCache(job_events)  # subscribes before the listener starts, as in api/main.py
    try:
        await job_events.start()
    except BaseException:
        await pool.close()
        raise
    redis = create_async_redis(settings)
    try:
        yield AppState(settings=settings, pool=pool, redis=redis, job_events=job_events, api_keys=api_keys)
    finally:
        await job_events.close()
        await redis.aclose()
        await pool.close()


async def serve(settings: Settings, token: str) -> None:
    async with open_state(settings) as state:
        key = await state.api_keys.verify(state.pool, token)
        if key is None:
            raise ConfigError(f"{KEY_ENV} is not a valid API key (unknown or revoked); create one with "
                              "`turnout keys create`")

        def caller(ctx: ServerRequestContext[Any, Any]) -> Caller:
            return Caller(key.id, client_of(ctx))

        server = TurnoutMCP(state, caller, wait_s=settings.mcp_wait_s).build()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def main(settings: Settings | None = None) -> None:
    settings = settings or get_settings()
    settings.require_services()
    token = os.environ.get(KEY_ENV, "").strip()
    if not token:
        raise ConfigError(f"{KEY_ENV} is not set: the MCP server acts for one API key (`turnout keys create`)")
    anyio.run(serve, settings, token)
