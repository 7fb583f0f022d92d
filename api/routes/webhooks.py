"""Webhook deliveries and dead letters. A key sees its own jobs' deliveries; an admin key sees all."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.deps import CurrentKey, Pool
from api.errors import ApiError
from api.schemas import DeliveryDocument, DeliveryList, WebhookStatusFilter, error_responses
from infra.db import webhooks as webhooks_db
from infra.db.api_keys import ApiKey

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])

BIGINT_MAX = 2**63 - 1  # delivery ids are bigserial
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
    status: Annotated[WebhookStatusFilter | None, Query(description="pending, delivered or dead")] = None,
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
async def get_delivery(
    delivery_id: Annotated[int, Path(ge=1, le=BIGINT_MAX)], key: CurrentKey, pool: Pool
) -> DeliveryDocument:
    async with pool.acquire() as conn:
        delivery = await webhooks_db.get_delivery(conn, delivery_id, api_key_id=_scope(key))
        if delivery is None:
            raise ApiError(404, "not_found", f"no webhook delivery {delivery_id} for this key")
        attempts = await webhooks_db.list_attempts(conn, delivery_id)
    return DeliveryDocument.from_delivery(delivery, attempts)
