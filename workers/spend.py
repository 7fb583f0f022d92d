"""The worker side of the budget port (`infra.budgets.SpendLedger`): reservations and settlements
on PostgreSQL (infra/db/budgets.py), priced by this deployment's table, with its default budgets."""

from __future__ import annotations

import asyncpg

from infra.budgets import BudgetLimits, Hold, call_cost
from infra.db import budgets as budgets_db
from infra.settings import Settings


class KeySpendLedger:
    def __init__(self, pool: asyncpg.Pool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings
        self.defaults = BudgetLimits.defaults(settings)

    async def reserve(self, job_id: str, model: str, input_tokens: int, output_tokens: int) -> Hold | None:
        usd = call_cost(self.settings, model, input_tokens, output_tokens)
        return await budgets_db.reserve(self.pool, job_id, model, usd=usd, tokens=input_tokens + output_tokens,
                                        defaults=self.defaults, hold_s=self.settings.key_budget_hold_s)

    async def settle(self, hold: Hold | None, input_tokens: int, output_tokens: int, *, calls: int = 1) -> None:
        if hold is None:
            return
        usd = call_cost(self.settings, hold.model, input_tokens, output_tokens)
        await budgets_db.settle(self.pool, hold, calls=calls, input_tokens=input_tokens, output_tokens=output_tokens,
                                usd=usd)
