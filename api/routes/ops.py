"""Operations: health (no key), queue summary and Prometheus metrics (admin), the dashboard page.

The dashboard page and its assets are a static shell with no data in them, served without a
key; every figure it shows comes from /v1/ops/queues, which needs an admin key that the page
asks for (kept in the tab's sessionStorage) or takes from the URL fragment `#key=...`
(never sent to the server, so it stays out of access logs).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import asyncpg
import redis.asyncio as aioredis
from fastapi import APIRouter, Response
from fastapi.responses import FileResponse, JSONResponse

from api.deps import AdminKey, Pool, Redis, SettingsDep
from api.errors import RETRY_AFTER, ApiError
from api.health import HealthReport, check_health
from api.metrics import CONTENT_TYPE, render
from api.ops import OpsData, OpsSummary, gather_ops, summarize
from api.schemas import error_responses
from infra.db import feedback as feedback_db
from infra.settings import Settings
from infra.transient import STORES_UNREADABLE

log = logging.getLogger("turnout.api.ops")
router = APIRouter(tags=["operations"])

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
_ASSET_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# Files the dashboard may load; anything else is a 404 (no path ever reaches the filesystem).
_ASSETS = {p.name: p for p in STATIC_DIR.iterdir() if p.suffix in _ASSET_TYPES} if STATIC_DIR.is_dir() else {}
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
GATHER_TIMEOUT_S = 10.0


@router.get(
    "/v1/ops/health",
    response_model=HealthReport,
    response_model_by_alias=True,
    summary="Dependency health (no key needed)",
    responses={503: {"model": HealthReport, "description": "a required dependency (Postgres, Redis) is down"}},
)
async def health(settings: SettingsDep, pool: Pool, redis_client: Redis) -> JSONResponse:
    report = await check_health(settings, pool, redis_client)
    down = report.status == "down"
    return JSONResponse(report.model_dump(mode="json", by_alias=True), status_code=503 if down else 200,
                        headers=RETRY_AFTER if down else None)


async def _gather(pool: asyncpg.Pool, redis_client: aioredis.Redis, settings: Settings, *, latency: bool = False
                  ) -> OpsData:
    try:
        return await asyncio.wait_for(gather_ops(pool, redis_client, settings, latency_histograms=latency),
                                      timeout=GATHER_TIMEOUT_S)
    except STORES_UNREADABLE as exc:
        log.warning("ops summary unavailable: %s", exc)
        raise ApiError(503, "unavailable", f"cannot read operations figures right now: {type(exc).__name__}; "
                       "see GET /v1/ops/health", headers=RETRY_AFTER) from exc


@router.get(
    "/v1/ops/queues",
    response_model=OpsSummary,
    response_model_by_alias=True,
    summary="Queues, workers, task latency, jobs, LLM spend, webhooks, re-embedding (admin)",
    responses=error_responses(401, 403, 503),
)
async def queues(_key: AdminKey, settings: SettingsDep, pool: Pool, redis_client: Redis) -> OpsSummary:
    return summarize(await _gather(pool, redis_client, settings))


@router.get(
    "/metrics",
    summary="Prometheus metrics (admin key as a bearer token)",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text exposition format"},
               **error_responses(401, 403, 503)},
)
async def metrics(_key: AdminKey, settings: SettingsDep, pool: Pool, redis_client: Redis) -> Response:
    data = await _gather(pool, redis_client, settings, latency=True)
    try:
        async with pool.acquire() as conn:
            feedback = await feedback_db.feedback_counts(conn)
    except STORES_UNREADABLE as exc:
        raise ApiError(503, "unavailable", f"cannot read the feedback counts right now: {type(exc).__name__}",
                       headers=RETRY_AFTER) from exc
    return Response(render(data, feedback=feedback), media_type=CONTENT_TYPE)


@router.get("/v1/ops/dashboard", summary="The operations dashboard page (its data needs an admin key)",
            response_class=FileResponse)
async def dashboard() -> FileResponse:
    return FileResponse(STATIC_DIR / "dashboard.html", media_type="text/html; charset=utf-8", headers=_PAGE_HEADERS)


@router.get("/v1/ops/dashboard/{asset}", include_in_schema=False)
async def dashboard_asset(asset: str) -> FileResponse:
    path = _ASSETS.get(asset)
    if path is None:
        raise ApiError(404, "not_found", f"no dashboard asset {asset!r}")
    return FileResponse(path, media_type=_ASSET_TYPES[path.suffix], headers=_PAGE_HEADERS)
