"""The per-key budget around the router's LLM calls (issue 27): an `Engine` that holds each call's
worst case from the job's key before it (`infra.budgets.SpendLedger`) and settles it after.

The worst case is what the rate limiter reserves too: the prompt's deliberately high estimate
(`estimate_input_tokens`, ~3 characters a token) plus the call's `max_tokens`, priced at the
router model's price. A call the budget has no room for is never made: `BudgetExceeded` (the
router ends the job `failed` with `budget_exceeded`). A call that failed or was aborted settles
with nothing used, as its usage counts it.
"""

from __future__ import annotations

import asyncio

from infra.budgets import SpendLedger
from infra.settings import LLMMode
from router.engine import Engine, EngineRequest, EngineResponse, Turn


class BudgetedEngine:
    def __init__(self, engine: Engine, spend: SpendLedger, job_id: str) -> None:
        self.engine = engine
        self.spend = spend
        self.job_id = job_id
        self.mode: LLMMode = engine.mode
        self.model: str = engine.model
        self.code_filters: bool = engine.code_filters

    def estimate_input_tokens(self, turns: list[Turn]) -> int:
        return self.engine.estimate_input_tokens(turns)

    async def complete(self, request: EngineRequest) -> EngineResponse:
        estimate = self.engine.estimate_input_tokens(request.turns)
        hold = await self.spend.reserve(self.job_id, self.engine.model, estimate, request.max_output_tokens)
        try:
            response = await self.engine.complete(request)
        except BaseException:
            # Shielded: a cancelled job still gives its hold back now (else the sweeper does, later).
            await asyncio.shield(self.spend.settle(hold, 0, 0, calls=0))
            raise
        await self.spend.settle(hold, response.input_tokens, response.output_tokens)
        return response
