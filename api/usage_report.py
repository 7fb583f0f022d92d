"""`GET /v1/usage` (issue 27): a key's settled LLM spend by UTC day and model over a date range,
and its budgets now (limits, spent, held, remaining room, reset times). An admin key sees every
key's. The numbers come from the budget ledger (infra/db/budgets.py), which every job's LLM call
settles into: they are the sum of the jobs' `usage`, and outlive the jobs' retention."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Annotated

import asyncpg
from pydantic import Field, model_validator

from api.job_query import ALL_KEYS
from infra.budgets import BudgetLimits, iso_z, month_start, reset_at
from infra.db import budgets as budgets_db
from infra.db.api_keys import ApiKey
from infra.results import WireModel
from infra.settings import Settings

MAX_RANGE_DAYS = 366
USD_PLACES = 8  # as a job's usage.costUsd


def usd(value: Decimal) -> float:
    return round(float(value), USD_PLACES)


class UsageQuery(WireModel):
    """`GET /v1/usage` parameters."""

    from_: date | None = Field(None, alias="from", description="First UTC day (default: this month's first)")
    to: date | None = Field(None, description="Last UTC day, inclusive (default: today)")
    api_key_id: str | None = Field(None, min_length=1, max_length=64,
                                   description=f"Admin keys only: one key's usage (default for an admin, or `{ALL_KEYS}`: "
                                               "every key's)")

    @model_validator(mode="after")
    def _range(self) -> UsageQuery:
        first, last = self.span()
        if first > last:
            raise ValueError("from must not be after to")
        if (last - first).days >= MAX_RANGE_DAYS:
            raise ValueError(f"at most {MAX_RANGE_DAYS} days at once")
        return self

    def span(self) -> tuple[date, date]:
        today = datetime.now(UTC).date()
        return self.from_ or month_start(self.to or today), self.to or today


class SpendDay(WireModel):
    date: date
    api_key_id: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class SpendTotals(WireModel):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class PeriodBudget(WireModel):
    """One period's budget now; a limit of null is unlimited (then remaining is null too)."""

    limit_usd: float | None
    spent_usd: float
    held_usd: Annotated[float, Field(description="Reserved by LLM calls in flight")]
    remaining_usd: float | None
    limit_tokens: int | None
    spent_tokens: int
    held_tokens: int
    remaining_tokens: int | None
    reset_at: str = Field(description="When the period rolls over (UTC midnight, or the next month's first)")
    exceeded: bool = Field(description="Spent up: submissions get 429 budget_exceeded until reset_at")


class KeyBudget(WireModel):
    api_key_id: str
    day: PeriodBudget
    month: PeriodBudget


class UsageDocument(WireModel):
    from_: date = Field(alias="from")
    to: date
    api_key_id: str | None = Field(description="The key reported on; null: every key (an admin's default)")
    days: list[SpendDay] = Field(description="Settled spend per UTC day, key and model, oldest first")
    totals: SpendTotals
    budgets: list[KeyBudget]


def _period(status: budgets_db.PeriodStatus) -> PeriodBudget:
    def room(limit: Decimal | int | None, used: Decimal | int) -> Decimal | int | None:
        return None if limit is None else max(limit - used, 0)

    remaining_usd = room(status.limit_usd, status.spent_usd + status.held_usd)
    remaining_tokens = room(status.limit_tokens, status.spent_tokens + status.held_tokens)
    return PeriodBudget(
        limit_usd=None if status.limit_usd is None else usd(status.limit_usd), spent_usd=usd(status.spent_usd),
        held_usd=usd(status.held_usd), remaining_usd=None if remaining_usd is None else usd(Decimal(remaining_usd)),
        limit_tokens=status.limit_tokens, spent_tokens=status.spent_tokens, held_tokens=status.held_tokens,
        remaining_tokens=None if remaining_tokens is None else int(remaining_tokens),
        reset_at=iso_z(reset_at(status.period, status.day)), exceeded=status.over,
    )


async def usage_report(pool: asyncpg.Pool, settings: Settings, key: ApiKey, query: UsageQuery) -> UsageDocument:
    """The report `key` may see; PermissionError when a non-admin names another key."""
    subject: str | None = key.id
    if query.api_key_id is not None and query.api_key_id != key.id:
        if not key.is_admin:
            raise PermissionError("apiKeyId: only an admin key may see another key's usage")
        subject = None if query.api_key_id == ALL_KEYS else query.api_key_id
    elif query.api_key_id is None and key.is_admin:
        subject = None
    first, last = query.span()
    rows = await budgets_db.spend_by_day(pool, subject, first, last)
    statuses = await budgets_db.budget_statuses(pool, None if subject is None else [subject],
                                                BudgetLimits.defaults(settings))
    days = [SpendDay(date=r.day, api_key_id=r.api_key_id, model=r.model, calls=r.calls, input_tokens=r.input_tokens,
                     output_tokens=r.output_tokens, cost_usd=usd(r.cost_usd)) for r in rows]
    totals = SpendTotals(calls=sum(r.calls for r in rows), input_tokens=sum(r.input_tokens for r in rows),
                         output_tokens=sum(r.output_tokens for r in rows),
                         cost_usd=usd(sum((r.cost_usd for r in rows), Decimal(0))))
    return UsageDocument.model_validate({
        "from": first, "to": last, "api_key_id": subject, "days": days, "totals": totals,
        "budgets": [KeyBudget(api_key_id=s.api_key_id, day=_period(s.day), month=_period(s.month)) for s in statuses],
    })

