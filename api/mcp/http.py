"""The MCP streamable HTTP endpoint inside the FastAPI app, at `/mcp`.

Stateless (no session id, no sticky sessions: any API replica answers any request). The SDK's
bearer middleware authenticates with Turnout's own API keys (the same hashed keys, the same
cache as the HTTP API); its transport security checks `Host` and `Origin`. The SDK's session
manager runs inside the FastAPI lifespan (`lifespan`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
from fastapi import FastAPI
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api.mcp.server import Caller, TurnoutMCP, client_of
from api.state import AppState
from infra.settings import Settings

PATH = "/mcp"
_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def transport_security(settings: Settings) -> TransportSecuritySettings:
    hosts, origins = list(settings.mcp_allowed_hosts), list(settings.mcp_allowed_origins)
    if not hosts:
        hosts = list(_LOOPBACK_HOSTS)
        if settings.public_base_url:
            netloc = urlsplit(settings.public_base_url).netloc
            hosts += [netloc] if ":" in netloc else [netloc, f"{netloc}:*"]
    if not origins:
        origins = list(_LOOPBACK_ORIGINS)
        if settings.public_base_url:
            parts = urlsplit(settings.public_base_url)
            origins.append(f"{parts.scheme}://{parts.netloc}")
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class ApiKeyVerifier:
    """The SDK's `TokenVerifier` over Turnout's API keys (the token is `<id>.<secret>`)."""

    def __init__(self, state: Callable[[], AppState]) -> None:
        self._state = state

    async def verify_token(self, token: str) -> AccessToken | None:
        state = self._state()
        key = await state.api_keys.verify(state.pool, token)
        if key is None:
            return None
        return AccessToken(token=token, client_id=key.id, scopes=[])


def http_caller(ctx: ServerRequestContext[Any, Any]) -> Caller:
    token = get_access_token()
    if token is None:  # RequireAuthMiddleware answers 401 before this; a guard, not a path
        raise MCPError(types.INVALID_REQUEST, "missing API key: send 'Authorization: Bearer <key>'")
    return Caller(token.client_id, client_of(ctx))


class _Endpoint:
    """The SDK's streamable HTTP app, once the lifespan has built its session manager."""

    def __init__(self) -> None:
        self.manager: StreamableHTTPSessionManager | None = None
        self.state: AppState | None = None

    def app_state(self) -> AppState:
        if self.state is None:
            raise RuntimeError("the MCP endpoint is used before the app started")
        return self.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.manager is None:
            raise RuntimeError("the MCP endpoint is used before the app started")
        await StreamableHTTPASGIApp(self.manager)(scope, receive, send)


def mount_mcp(app: FastAPI, settings: Settings) -> Callable[[AppState], AbstractAsyncContextManager[None]]:
    """Add `/mcp` to `app`; returns the lifespan hook that runs the SDK's session manager."""
    endpoint = _Endpoint()
    # The SDK's bearer middleware: 401 without a valid key; the key's id is the access token's client id.
    guarded = AuthenticationMiddleware(
        AuthContextMiddleware(RequireAuthMiddleware(endpoint, required_scopes=[])),
        backend=BearerAuthBackend(ApiKeyVerifier(endpoint.app_state)),
    )
    app.router.routes.append(Route(PATH, endpoint=guarded, methods=["GET", "POST", "DELETE"]))

    @asynccontextmanager
    async def lifespan(state: AppState) -> AsyncIterator[None]:
        endpoint.state = state
        server = TurnoutMCP(state, http_caller, wait_s=settings.mcp_wait_s).build()
        endpoint.manager = StreamableHTTPSessionManager(
            app=server, stateless=True, json_response=True, security_settings=transport_security(settings),
        )
        manager = endpoint.manager
        ready, stop = asyncio.Event(), asyncio.Event()

        async def run_manager() -> None:
            # The SDK's task group must be entered and left by one task; a lifespan may be left by
            # another (an async fixture, some servers), so the manager lives in a task of its own.
            async with manager.run():
                ready.set()
                await stop.wait()

        runner = asyncio.create_task(run_manager())
        try:
            started = asyncio.create_task(ready.wait())
            await asyncio.wait({runner, started}, return_when=asyncio.FIRST_COMPLETED)
            started.cancel()
            if runner.done():
                runner.result()  # the manager failed to start: raise its error
            yield
        finally:
            stop.set()
            await runner
            endpoint.manager = endpoint.state = None

    return lifespan
