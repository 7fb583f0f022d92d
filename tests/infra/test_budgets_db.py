"""The budget ledger's SQL on the real PostgreSQL (infra/db/budgets.py): concurrent reservations
never hold more than the budget, settling replaces a hold by the real spend, a dead worker's hold
is released by the sweep, and a refusal names the period and its reset."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal

import asyncpg

from infra.budgets import BudgetExceeded, BudgetLimits, Hold, reset_at
from infra.db import budgets as budgets_db
from infra.db.api_keys import create_key
from infra.db.jobs import create_job

UNLIMITED = BudgetLimits()


async def _job_of_key(pool: asyncpg.Pool, budgets: BudgetLimits) -> tuple[str, str]:
    async with pool.acquire() as conn:
        key = await create_key(conn, "budget-test", budgets=budgets)
        job, _ = await create_job(conn, api_key_id=key.key.id, question="q", answer_language=None, page_size=None,
                                  webhook_url=None, idempotency_key=None, request_hash="h", lease_s=60)
    return key.key.id, job.id


async def _reserve(pool: asyncpg.Pool, job_id: str, usd: str, tokens: int = 0) -> Hold | BudgetExceeded:
    try:
        hold = await budgets_db.reserve(pool, job_id, "m", usd=Decimal(usd), tokens=tokens, defaults=UNLIMITED,
                                        hold_s=60)
    except BudgetExceeded as exc:
        return exc
    assert hold is not None
    return hold


async def test_concurrent_reservations_hold_at_most_the_budget(pool: asyncpg.Pool) -> None:
    key_id, job_id = await _job_of_key(pool, BudgetLimits(daily_usd=Decimal("0.05")))
    outcomes = await asyncio.gather(*(_reserve(pool, job_id, "0.01") for _ in range(12)))
    holds = [o for o in outcomes if isinstance(o, Hold)]
    refused = [o for o in outcomes if isinstance(o, BudgetExceeded)]
    assert len(holds) == 5 and len(refused) == 7
    assert all(r.period == "day" and r.unit == "usd" for r in refused)
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert status.day.held_usd == Decimal("0.05") and status.day.spent_usd == 0
    # Settled for less than held: the rest is room again, the spend is recorded by day and model.
    await asyncio.gather(*(budgets_db.settle(pool, h, calls=1, input_tokens=10, output_tokens=5,
                                             usd=Decimal("0.004")) for h in holds))
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert (status.day.held_usd, status.day.spent_usd, status.day.spent_tokens) == (0, Decimal("0.020"), 75)
    assert (status.month.spent_usd, status.month.held_usd) == (Decimal("0.020"), 0)
    [row] = await budgets_db.spend_by_day(pool, key_id, status.day.day, status.day.day)
    assert (row.model, row.calls, row.input_tokens, row.output_tokens, row.cost_usd) == ("m", 5, 50, 25,
                                                                                         Decimal("0.020"))
    more = await asyncio.gather(*(_reserve(pool, job_id, "0.01") for _ in range(5)))
    assert sum(isinstance(o, Hold) for o in more) == 3  # 0.02 spent + 3 x 0.01 held = 0.05


async def test_a_keys_first_concurrent_calls_are_all_held_when_there_is_room(pool: asyncpg.Pool) -> None:
    """The month's ledger row does not exist yet: one call creates it while the others find it
    already there; none of them is refused (or fails) for lack of a row, with room or no limit."""
    for budgets in [UNLIMITED, BudgetLimits(monthly_usd=Decimal("5"))] * 5:  # a race: tried on ten keys
        _, job_id = await _job_of_key(pool, budgets)
        outcomes = await asyncio.gather(*(_reserve(pool, job_id, "0.01") for _ in range(12)))
        assert all(isinstance(o, Hold) for o in outcomes), outcomes


async def test_a_token_budget_and_the_month_are_checked_in_the_same_statement(pool: asyncpg.Pool) -> None:
    _, job_id = await _job_of_key(pool, BudgetLimits(monthly_tokens=1000, daily_usd=Decimal(1)))
    assert isinstance(await _reserve(pool, job_id, "0.001", tokens=600), Hold)
    refused = await _reserve(pool, job_id, "0.001", tokens=600)
    assert isinstance(refused, BudgetExceeded)
    assert (refused.period, refused.unit, refused.limit, refused.spent, refused.needed) == ("month", "tokens", 1000,
                                                                                            600, 600)
    today = datetime.now(UTC).date()
    assert refused.resets == reset_at("month", today) and refused.details()["resetAt"].endswith("T00:00:00Z")


async def test_a_dead_workers_hold_is_released_by_the_sweep(pool: asyncpg.Pool) -> None:
    key_id, job_id = await _job_of_key(pool, BudgetLimits(daily_usd=Decimal("0.01")))
    hold = await _reserve(pool, job_id, "0.01")
    assert isinstance(hold, Hold)
    assert isinstance(await _reserve(pool, job_id, "0.01"), BudgetExceeded)
    async with pool.acquire() as conn:
        assert await budgets_db.release_stale(conn) == 0  # not expired, its job still running
        await conn.execute("UPDATE budget_holds SET expires_at = now() - interval '1 second' WHERE id = $1", hold.id)
        assert await budgets_db.release_stale(conn) == 1
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert status.day.held_usd == 0 and status.month.held_usd == 0
    # The late settle of the released hold records its spend, and gives back nothing twice.
    await budgets_db.settle(pool, hold, calls=1, input_tokens=1, output_tokens=1, usd=Decimal("0.002"))
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert (status.day.held_usd, status.day.spent_usd) == (0, Decimal("0.002"))


async def test_the_holds_of_an_ended_job_are_released(pool: asyncpg.Pool) -> None:
    key_id, job_id = await _job_of_key(pool, BudgetLimits(daily_usd=Decimal("1")))
    assert isinstance(await _reserve(pool, job_id, "0.3"), Hold)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE jobs SET status = 'failed', finished_at = now() - interval '2 minutes' "
                           "WHERE id = $1", job_id)
        assert await budgets_db.release_stale(conn) == 1
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert status.day.held_usd == 0


async def test_a_new_day_starts_from_nothing_but_the_month_keeps_counting(pool: asyncpg.Pool) -> None:
    key_id, job_id = await _job_of_key(pool, BudgetLimits(daily_usd=Decimal("0.01"), monthly_usd=Decimal("0.05")))
    hold = await _reserve(pool, job_id, "0.01")
    assert isinstance(hold, Hold)
    await budgets_db.settle(pool, hold, calls=1, input_tokens=1, output_tokens=1, usd=Decimal("0.01"))
    refused = await _reserve(pool, job_id, "0.01")
    assert isinstance(refused, BudgetExceeded) and refused.period == "day"
    async with pool.acquire() as conn:  # the ledger's day is yesterday (a month's first day: stays in the month)
        await conn.execute("UPDATE key_budget_ledger SET day = month - 1 WHERE api_key_id = $1", key_id)
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert status.day.spent_usd == 0 and status.month.spent_usd == Decimal("0.01") and not status.day.over
    assert isinstance(await _reserve(pool, job_id, "0.01"), Hold)
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert (status.day.held_usd, status.month.held_usd, status.month.spent_usd) == (Decimal("0.01"),
                                                                                   Decimal("0.01"), Decimal("0.01"))


async def test_spent_up_means_over_and_names_the_reset(pool: asyncpg.Pool) -> None:
    key_id, job_id = await _job_of_key(pool, BudgetLimits(daily_tokens=100))
    hold = await _reserve(pool, job_id, "0", tokens=100)
    assert isinstance(hold, Hold)
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    assert status.exceeded() is None  # held, not spent
    await budgets_db.settle(pool, hold, calls=1, input_tokens=60, output_tokens=40, usd=Decimal(0))
    [status] = await budgets_db.budget_statuses(pool, [key_id], UNLIMITED)
    over = status.exceeded()
    assert over is not None and (over.period, over.unit, over.spent) == ("day", "tokens", 100)
    assert over.resets == reset_at("day", datetime.now(UTC).date())


def test_reset_times_roll_over_at_utc_midnight_and_the_months_first() -> None:
    from datetime import date

    assert reset_at("day", date(2026, 12, 31)) == datetime(2027, 1, 1, tzinfo=UTC)
    assert reset_at("month", date(2026, 12, 2)) == datetime(2027, 1, 1, tzinfo=UTC)
    assert reset_at("month", date(2026, 2, 28)) == datetime(2026, 3, 1, tzinfo=UTC)
    assert reset_at("day", date(2028, 2, 28)) == datetime(2028, 2, 29, tzinfo=UTC)
