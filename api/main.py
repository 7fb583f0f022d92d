"""The FastAPI application factory (`uvicorn api.main:create_app --factory`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api.errors import install_error_handlers
from api.mcp.http import mount_mcp
from api.middleware import install_request_limits
from api.routes import ROUTERS
from api.state import open_state
from infra.settings import Settings, get_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    settings.require_services()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_state(settings) as state:
            app.state.turnout = state
            async with run_mcp(state):  # the MCP SDK's session manager lives as long as the app
                yield

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
