"""A submission from a key whose budget is spent (issue 27): `429 budget_exceeded`, with the reset
time in `details.resetAt` and `Retry-After`. Shared by `POST /v1/questions` and MCP.

"Spent" is LiteLLM's rule: a period's settled spend reached its limit. A key with room left, but
less than a call's worst case, is accepted; its job then fails `budget_exceeded` before the call.
"""

from __future__ import annotations

import asyncpg

from api.errors import ApiError
from infra.budgets import BudgetExceeded, BudgetLimits
from infra.db import budgets as budgets_db
from infra.settings import Settings

CODE = "budget_exceeded"


async def refuse_if_spent(pool: asyncpg.Pool, settings: Settings, key_id: str, own: BudgetLimits | None) -> None:
    """429 when a period of the key's budgets is spent. `own`: the key's own budgets when known
    (from the key cache): a key without any budget costs no round trip."""
    defaults = BudgetLimits.defaults(settings)
    if own is not None and own.over(defaults).unlimited:
        return
    statuses = await budgets_db.budget_statuses(pool, [key_id], defaults)
    exceeded = statuses[0].exceeded() if statuses else None
    if exceeded is not None:
        raise budget_error(exceeded)


def budget_error(exceeded: BudgetExceeded) -> ApiError:
    return ApiError(429, CODE, exceeded.message, exceeded.details(),
                    headers={"Retry-After": str(exceeded.retry_after_s)})
