"""Webhook deliveries, dead letters, endpoints and recovery. A key sees its own jobs' deliveries
and endpoints; an admin key sees (and may redeliver or enable) all. `recover` and the secret
rotation act on the caller's own key only. Every recovery action is audited (`webhook_actions`)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from api.deps import CurrentKey, Pool, SettingsDep, get_producer
from api.errors import ApiError
from api.schemas import (
    DeliveryDocument,
    DeliveryList,
    EndpointDocument,
    EndpointList,
    RecoverRequest,
    RecoverResult,
    SecretRotation,
    WebhookStatusFilter,
    error_responses,
)
from infra.db import webhooks as webhooks_db
from infra.db.api_keys import ApiKey, rotate_webhook_secret
from infra.settings import Settings
from workers.dispatch import send_webhook

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])

BIGINT_MAX = 2**63 - 1  # delivery ids are bigserial
DeliveryId = Annotated[int, Path(ge=1, le=BIGINT_MAX)]
EndpointId = Annotated[int, Path(ge=1, le=BIGINT_MAX)]
Limit = Annotated[int, Query(ge=1, le=200, description="Page size")]
Before = Annotated[
    int | None, Query(ge=1, le=BIGINT_MAX, description="Only deliveries with a smaller id (the previous page's nextBefore)")
]


def _scope(key: ApiKey) -> str | None:
    return None if key.is_admin else key.id


async def _list(pool: Pool, key: ApiKey, status: WebhookStatusFilter | None, before: int | None, limit: int) -> DeliveryList:
    async with pool.acquire() as conn:
        rows = await webhooks_db.list_deliveries(
            conn, api_key_id=_scope(key), status=status, before_id=before, limit=limit
        )
    items = [DeliveryDocument.from_delivery(d) for d in rows]
    return DeliveryList(items=items, next_before=items[-1].id if len(items) == limit else None)


@router.get("/deliveries", response_model=DeliveryList, summary="List webhook deliveries",
            responses=error_responses(401, 422))
async def list_deliveries(
    key: CurrentKey,
    pool: Pool,
    status: Annotated[WebhookStatusFilter | None, Query(description="pending, delivered, dead or disabled")] = None,
    before: Before = None,
    limit: Limit = 50,
) -> DeliveryList:
    """Newest first."""
    return await _list(pool, key, status, before, limit)


@router.get("/dead-letters", response_model=DeliveryList, summary="List dead-lettered webhook deliveries",
            responses=error_responses(401, 422))
async def list_dead_letters(key: CurrentKey, pool: Pool, before: Before = None, limit: Limit = 50) -> DeliveryList:
    """Deliveries that ran out of retries (or failed permanently); `lastError` says why."""
    return await _list(pool, key, "dead", before, limit)


@router.get("/deliveries/{delivery_id}", response_model=DeliveryDocument, summary="A delivery and its attempts",
            responses=error_responses(401, 404))
async def get_delivery(delivery_id: DeliveryId, key: CurrentKey, pool: Pool) -> DeliveryDocument:
    async with pool.acquire() as conn:
        delivery = await webhooks_db.get_delivery(conn, delivery_id, api_key_id=_scope(key))
        if delivery is None:
            raise ApiError(404, "not_found", f"no webhook delivery {delivery_id} for this key")
        attempts = await webhooks_db.list_attempts(conn, delivery_id)
    return DeliveryDocument.from_delivery(delivery, attempts)


async def _send(request: Request, settings: Settings, delivery_ids: list[int]) -> None:
    producer = get_producer(request)
    # Best effort like every send: the rows are pending and due, so the sweeper sends a lost one.
    await asyncio.to_thread(lambda: [send_webhook(producer, settings, i) for i in delivery_ids])


@router.post("/deliveries/{delivery_id}/redeliver", response_model=DeliveryDocument, status_code=202,
             summary="Send a delivery again", responses=error_responses(401, 404, 409))
async def redeliver(
    delivery_id: DeliveryId, request: Request, key: CurrentKey, pool: Pool, settings: SettingsDep
) -> DeliveryDocument:
    """Queue the delivery again with the same id (so the same `webhook-id`: receivers dedupe on it)
    and a fresh retry schedule. Idempotent: a delivery that is already pending is left as it is
    (nothing is sent twice); its document says so."""
    async with pool.acquire() as conn:
        delivery = await webhooks_db.get_delivery(conn, delivery_id, api_key_id=_scope(key))
        if delivery is None:
            raise ApiError(404, "not_found", f"no webhook delivery {delivery_id} for this key")
        if await webhooks_db.endpoint_disabled(conn, delivery.endpoint_id):
            raise ApiError(409, "endpoint_disabled", "this delivery's endpoint is disabled; enable it first "
                           f"(POST /v1/webhooks/endpoints/{delivery.endpoint_id}/enable)",
                           {"endpointId": delivery.endpoint_id})
        async with conn.transaction():
            requeued = await webhooks_db.redeliver(conn, delivery_id)
            await webhooks_db.record_action(conn, api_key_id=key.id, action="redeliver",
                                            target={"deliveryId": delivery_id}, affected=int(requeued))
        after = await webhooks_db.get_delivery(conn, delivery_id, api_key_id=None)
    if requeued:
        await _send(request, settings, [delivery_id])
    assert after is not None
    return DeliveryDocument.from_delivery(after)


@router.post("/recover", response_model=RecoverResult, status_code=202,
             summary="Send again every failed or unsent delivery since a time", responses=error_responses(401))
async def recover(body: RecoverRequest, request: Request, key: CurrentKey, pool: Pool,
                  settings: SettingsDep) -> RecoverResult:
    """This key's deliveries created since `since` that are `dead` (retries ran out) or `disabled`
    (not sent while their endpoint was disabled), to endpoints enabled now, are queued again.
    Idempotent: delivered and pending deliveries are never touched, so repeating the call sends
    nothing twice."""
    statuses: list[webhooks_db.RecoverableStatus] = [body.status] if body.status else ["dead", "disabled"]
    async with pool.acquire() as conn, conn.transaction():
        requeued, skipped = await webhooks_db.recover(conn, api_key_id=key.id, since=body.since, statuses=statuses)
        await webhooks_db.record_action(conn, api_key_id=key.id, action="recover",
                                        target={"since": body.since.isoformat(), "statuses": statuses},
                                        affected=len(requeued))
    await _send(request, settings, requeued)
    return RecoverResult(requeued=requeued, skipped_disabled=skipped)


@router.get("/endpoints", response_model=EndpointList, summary="Webhook endpoints and their health",
            responses=error_responses(401))
async def list_endpoints(key: CurrentKey, pool: Pool) -> EndpointList:
    """One per (API key, origin): consecutive failures, last success, and whether it is disabled
    (failing longer than TURNOUT_WEBHOOK_ENDPOINT_DISABLE_AFTER_S, or it answered 410)."""
    async with pool.acquire() as conn:
        rows = await webhooks_db.list_endpoints(conn, api_key_id=_scope(key))
    return EndpointList(items=[EndpointDocument.from_endpoint(e) for e in rows])


@router.post("/endpoints/{endpoint_id}/enable", response_model=EndpointDocument,
             summary="Enable a disabled endpoint", responses=error_responses(401, 404))
async def enable_endpoint(endpoint_id: EndpointId, key: CurrentKey, pool: Pool) -> EndpointDocument:
    """New jobs queue deliveries to it again; what it missed is sent by `POST /v1/webhooks/recover`.
    Enabling an enabled endpoint changes nothing."""
    async with pool.acquire() as conn, conn.transaction():
        before = await webhooks_db.get_endpoint(conn, endpoint_id, api_key_id=_scope(key))
        endpoint = await webhooks_db.enable_endpoint(conn, endpoint_id, api_key_id=_scope(key))
        if before is None or endpoint is None:
            raise ApiError(404, "not_found", f"no webhook endpoint {endpoint_id} for this key")
        await webhooks_db.record_action(conn, api_key_id=key.id, action="enable", target={"endpointId": endpoint_id},
                                        affected=int(before.disabled_at is not None))
    return EndpointDocument.from_endpoint(endpoint)


@router.post("/secret/rotate", response_model=SecretRotation, summary="Rotate this key's webhook secret",
             responses=error_responses(401))
async def rotate_secret(key: CurrentKey, pool: Pool, settings: SettingsDep) -> SecretRotation:
    """A new Standard Webhooks secret for the caller's key. Until `previousValidUntil`
    (TURNOUT_WEBHOOK_SECRET_OVERLAP_S, 24 h) deliveries carry two signatures, one per secret, so
    a receiver can switch at any time in between. Not idempotent: each call makes a new secret."""
    async with pool.acquire() as conn, conn.transaction():
        secret, until = await rotate_webhook_secret(conn, key.id, overlap_s=settings.webhook_secret_overlap_s)
        await webhooks_db.record_action(conn, api_key_id=key.id, action="rotate_secret", target={}, affected=1)
    return SecretRotation(secret=secret, previous_valid_until=until)
