"""`turnout mcp`: the MCP server over stdio, for a local host that starts it as a subprocess.

The API key comes from the environment (`TURNOUT_API_KEY`), checked once at start-up: every call
of this process is that key's (its jobs, its submission limit). The same tools and resources as
the HTTP endpoint; stdout carries only MCP messages (logs go to stderr).
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from api.mcp.server import Caller, TurnoutMCP, client_of
from api.state import open_state
from infra.settings import ConfigError, Settings, get_settings

KEY_ENV = "TURNOUT_API_KEY"


async def serve(settings: Settings, token: str) -> None:
    async with open_state(settings, pool_size=4) as state:
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
