"""`GET /v1/usage`: the key's LLM spend by day and model, and its budgets (api/usage_report.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import CurrentKey, Pool, SettingsDep
from api.errors import ApiError
from api.schemas import error_responses
from api.usage_report import UsageDocument, UsageQuery, usage_report

router = APIRouter(prefix="/v1", tags=["usage"])


@router.get("/usage", response_model=UsageDocument, summary="LLM spend by day and model, and the budgets",
            responses=error_responses(401, 403, 422))
async def get_usage(
    query: Annotated[UsageQuery, Query()], key: CurrentKey, pool: Pool, settings: SettingsDep,
) -> UsageDocument:
    """The caller's settled LLM spend per UTC day and model (calls, tokens in and out, USD) from
    `from` to `to` (default: this month), with its daily and monthly budgets now: limits, spent,
    held by calls in flight, remaining room and when each resets. An admin key sees every key's
    (or one key's, with `apiKeyId`); another key's usage is a 403 for any other key."""
    try:
        return await usage_report(pool, settings, key, query)
    except PermissionError as exc:
        raise ApiError(403, "forbidden", str(exc), {"field": "apiKeyId"}) from None
