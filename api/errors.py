"""One JSON shape for every error: {"error": {"code", "message", "details"}}. Never a bare 500."""

from __future__ import annotations

import logging
from typing import Any

from asyncpg.exceptions import CharacterNotInRepertoireError, UntranslatableCharacterError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from infra.transient import POSTGRES_DOWN, REDIS_DOWN

log = logging.getLogger("turnout.api")


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details, self.headers = status, code, message, details, headers


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return {"error": body}


_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
                 409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type", 422: "invalid_request",
                 429: "rate_limited", 503: "unavailable"}


DATABASE_RETRY_AFTER_S = 5
RETRY_AFTER = {"Retry-After": str(DATABASE_RETRY_AFTER_S)}  # on every 503 of a dependency outage


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> str:
    """The methods some route serves at the request's path (`Allow` of a 405): every route's,
    not only the first partial match's (`/v1/jobs/{id}` has GET and DELETE)."""
    routes = request.app.router.routes
    allowed = [m for m in _METHODS
               if any(route.matches({**request.scope, "method": m})[0] is Match.FULL for route in routes)]
    return ", ".join(allowed)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message, exc.details), exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {"field": ".".join(str(p) for p in e["loc"] if p != "body"), "message": e["msg"]} for e in exc.errors()
        ]
        first = details[0] if details else {"field": "", "message": "invalid request"}
        return JSONResponse(
            error_body("invalid_request", f"{first['field'] or 'request'}: {first['message']}", details), 422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "error")
        headers = exc.headers
        if exc.status_code == 405:  # every method the path has, not only the first route's (RFC 9110)
            headers = {**(headers or {}), "Allow": allowed_methods(request)}
        return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=headers)

    # PostgreSQL text cannot hold NUL (and rejects some code points): that is the client's input,
    # whichever field or path parameter carried it, and nothing was stored.
    @app.exception_handler(CharacterNotInRepertoireError)
    @app.exception_handler(UntranslatableCharacterError)
    async def _unstorable_text(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body(
            "invalid_request",
            "the request contains a character that cannot be stored (a NUL \\u0000 byte?); remove it",
        ), 422)

    async def _database_unavailable(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s: %s", type(exc).__name__, exc)
        return JSONResponse(
            error_body("unavailable", "the database (PostgreSQL) is unavailable right now; retry shortly "
                       "(an Idempotency-Key makes a retried submission safe)"),
            503, headers=RETRY_AFTER,
        )

    async def _redis_unavailable(_: Request, exc: Exception) -> JSONResponse:
        log.warning("redis unavailable: %s: %s", type(exc).__name__, exc)
        return JSONResponse(
            error_body("unavailable", "the queue and cache store (Redis) is unavailable right now; retry shortly"),
            503, headers=RETRY_AFTER,
        )

    # PostgreSQL or Redis unreachable, frozen or restarting: a 503 the client can retry, never a 500.
    for exc_class in POSTGRES_DOWN:
        app.add_exception_handler(exc_class, _database_unavailable)
    for exc_class in REDIS_DOWN:
        app.add_exception_handler(exc_class, _redis_unavailable)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return JSONResponse(error_body("internal_error", "internal error; the request was not completed"), 500)
