"""Request body size limit: a 413 in the one error shape, before a large body is read.

A declared `Content-Length` over the limit is refused at once; a chunked body is counted as
it streams and refused as soon as it passes the limit (the route never sees it).
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import error_body
from infra.settings import Settings


def _too_large_message(max_bytes: int) -> str:
    return f"request body exceeds {max_bytes} bytes (TURNOUT_LIMIT_REQUEST_MAX_BYTES)"


class RequestSizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            try:
                too_large = int(declared) > self.max_bytes
            except ValueError:
                response = JSONResponse(error_body("bad_request", "Content-Length is not a number"), 400)
                await response(scope, receive, send)
                return
            if too_large:
                response = JSONResponse(
                    error_body("payload_too_large", _too_large_message(self.max_bytes), {"maxBytes": self.max_bytes}),
                    413,
                )
                await response(scope, receive, send)
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # An HTTPException passes FastAPI's body parsing untouched and is rendered by
                    # the app's handler in the one error shape.
                    raise StarletteHTTPException(413, _too_large_message(self.max_bytes))
            return message

        await self.app(scope, counted, send)


def install_request_limits(app: FastAPI, settings: Settings) -> None:
    app.add_middleware(RequestSizeLimit, max_bytes=settings.limits.request_max_bytes)
