"""Per-key budgets (migration 0013): the ledger of a key's month and day, the holds of calls in
flight, the settled spend by day and model. The one module that writes `key_budget_ledger`,
`budget_holds` and `key_spend`.

Why it cannot overspend: a reservation is ONE statement, a conditional `UPDATE ... RETURNING` of
the key's one ledger row for the UTC month, which carries the month's and the current day's
spend and holds. PostgreSQL locks the row and re-checks the condition on its newest version
(READ COMMITTED's re-check of an updated row), so two concurrent reservations are serialised on
the row and the second sees the first's hold: settled + held + this call <= limit, for every
period and unit at once. The hold's row is inserted by the same statement.

Holds and settlements commit without waiting for the WAL flush (`synchronous_commit = off` for
those statements only, as the audit rows; ~0.6 ms each on an LLM call's path): WAL is flushed in
order, so the job's final (synchronous) commit makes them durable. A database crash mid-job can
lose the last ones together with their ledger change (one statement, one transaction): a lost
hold held nothing, a lost settlement leaves its hold for the sweeper and its spend uncounted.

A hold whose call never settles (its worker died mid-call) is given back by `release_stale`
(the sweeper): once it expired (`TURNOUT_KEY_BUDGET_HOLD_S`), or once its job has ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import asyncpg

from infra.budgets import BudgetExceeded, BudgetLimits, Hold, Period, Unit, reset_at

# The key's budgets (its own, else the defaults $2..$5) and the UTC day and month, for job $1.
_KEY_OF_JOB = """
    SELECT j.api_key_id,
           COALESCE(a.daily_budget_usd, $2::numeric) AS daily_usd,
           COALESCE(a.monthly_budget_usd, $3::numeric) AS monthly_usd,
           COALESCE(a.daily_budget_tokens, $4::bigint) AS daily_tokens,
           COALESCE(a.monthly_budget_tokens, $5::bigint) AS monthly_tokens,
           (now() AT TIME ZONE 'UTC')::date AS today,
           date_trunc('month', now() AT TIME ZONE 'UTC')::date AS month
    FROM jobs j JOIN api_keys a ON a.id = j.api_key_id WHERE j.id = $1
"""

_RESERVE_TRIES = 8  # each miss that finds room means another call changed the row in between

# $6 the call's worst case in USD, $7 in tokens, $8 the hold's lifetime in seconds.
_RESERVE = f"""
    WITH k AS ({_KEY_OF_JOB}),
    call AS (SELECT $6::numeric AS usd, $7::bigint AS tokens),
    held AS (
        UPDATE key_budget_ledger l SET
            day = k.today,
            day_usd = CASE WHEN l.day = k.today THEN l.day_usd ELSE 0 END,
            day_tokens = CASE WHEN l.day = k.today THEN l.day_tokens ELSE 0 END,
            day_held_usd = CASE WHEN l.day = k.today THEN l.day_held_usd ELSE 0 END + $6,
            day_held_tokens = CASE WHEN l.day = k.today THEN l.day_held_tokens ELSE 0 END + $7,
            month_held_usd = l.month_held_usd + $6,
            month_held_tokens = l.month_held_tokens + $7
        FROM k
        WHERE l.api_key_id = k.api_key_id AND l.month = k.month
          AND (k.monthly_usd IS NULL OR l.month_usd + l.month_held_usd + $6 <= k.monthly_usd)
          AND (k.monthly_tokens IS NULL OR l.month_tokens + l.month_held_tokens + $7 <= k.monthly_tokens)
          AND (k.daily_usd IS NULL OR
               CASE WHEN l.day = k.today THEN l.day_usd + l.day_held_usd ELSE 0 END + $6 <= k.daily_usd)
          AND (k.daily_tokens IS NULL OR
               CASE WHEN l.day = k.today THEN l.day_tokens + l.day_held_tokens ELSE 0 END + $7 <= k.daily_tokens)
        RETURNING l.api_key_id, l.month, l.day
    ),
    hold AS (
        INSERT INTO budget_holds (api_key_id, job_id, month, day, usd, tokens, expires_at)
        SELECT api_key_id, $1, month, day, $6, $7, now() + make_interval(secs => $8::double precision) FROM held
        RETURNING id
    )
    SELECT (SELECT id FROM hold) AS hold_id, k.*, set_config('synchronous_commit', 'off', true) AS async_commit
    FROM k
"""  # noqa: S608 (constants only)

_LEDGER_ROW = """
    INSERT INTO key_budget_ledger (api_key_id, month, day) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING
"""

_LEDGER = "SELECT * FROM key_budget_ledger WHERE api_key_id = $1 AND month = $2"

# $1 hold, $2 key, $3 month, $4 day, $5 model, $6 calls, $7 input, $8 output, $9 USD.
_SETTLE = """
    WITH h AS (DELETE FROM budget_holds WHERE id = $1::bigint RETURNING usd, tokens),
    ledger AS (
        UPDATE key_budget_ledger l SET
            month_usd = l.month_usd + $9::numeric,
            month_tokens = l.month_tokens + $7::bigint + $8::bigint,
            month_held_usd = l.month_held_usd - COALESCE((SELECT usd FROM h), 0),
            month_held_tokens = l.month_held_tokens - COALESCE((SELECT tokens FROM h), 0),
            day_usd = l.day_usd + CASE WHEN l.day = $4 THEN $9 ELSE 0 END,
            day_tokens = l.day_tokens + CASE WHEN l.day = $4 THEN $7 + $8 ELSE 0 END,
            day_held_usd = l.day_held_usd - CASE WHEN l.day = $4 THEN COALESCE((SELECT usd FROM h), 0) ELSE 0 END,
            day_held_tokens = l.day_held_tokens
                              - CASE WHEN l.day = $4 THEN COALESCE((SELECT tokens FROM h), 0) ELSE 0 END
        WHERE l.api_key_id = $2 AND l.month = $3
        RETURNING 1
    ),
    spend AS (
        INSERT INTO key_spend AS s (api_key_id, day, model, calls, input_tokens, output_tokens, cost_usd)
        SELECT $2::text, $4::date, $5::text, $6::bigint, $7::bigint, $8::bigint, $9::numeric
        WHERE $6::bigint > 0 OR $7::bigint + $8::bigint > 0
        ON CONFLICT (api_key_id, day, model) DO UPDATE SET
            calls = s.calls + EXCLUDED.calls, input_tokens = s.input_tokens + EXCLUDED.input_tokens,
            output_tokens = s.output_tokens + EXCLUDED.output_tokens, cost_usd = s.cost_usd + EXCLUDED.cost_usd
        RETURNING 1
    )
    -- Every part runs whether read or not (data-modifying WITH); committed without the WAL flush.
    SELECT set_config('synchronous_commit', 'off', true)
"""

# Holds whose call never settled: expired, or of a job that ended a while ago (its runner is gone).
_RELEASE_STALE = """
    WITH h AS (
        DELETE FROM budget_holds b
        WHERE b.expires_at < now()
           OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = b.job_id AND j.finished_at < now() - make_interval(secs => $1))
        RETURNING api_key_id, month, day, usd, tokens
    ),
    released AS (
        UPDATE key_budget_ledger l SET
            month_held_usd = l.month_held_usd - (SELECT sum(usd) FROM h WHERE h.api_key_id = l.api_key_id
                                                 AND h.month = l.month),
            month_held_tokens = l.month_held_tokens - (SELECT sum(tokens) FROM h WHERE h.api_key_id = l.api_key_id
                                                       AND h.month = l.month),
            day_held_usd = l.day_held_usd - COALESCE((SELECT sum(usd) FROM h WHERE h.api_key_id = l.api_key_id
                                                      AND h.month = l.month AND h.day = l.day), 0),
            day_held_tokens = l.day_held_tokens - COALESCE((SELECT sum(tokens) FROM h WHERE h.api_key_id = l.api_key_id
                                                            AND h.month = l.month AND h.day = l.day), 0)
        WHERE (l.api_key_id, l.month) IN (SELECT api_key_id, month FROM h)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM h) AS holds, (SELECT count(*) FROM released) AS ledgers
"""


async def reserve(
    pool: asyncpg.Pool, job_id: str, model: str, *, usd: Decimal, tokens: int, defaults: BudgetLimits, hold_s: float,
) -> Hold | None:
    """Hold `usd` and `tokens` from the job's key for one call, or raise `BudgetExceeded`. None: the
    job has no key (nothing is accounted)."""
    args = (job_id, defaults.daily_usd, defaults.monthly_usd, defaults.daily_tokens, defaults.monthly_tokens,
            usd, tokens, hold_s)
    async with pool.acquire() as conn:
        # Again after creating the month's ledger row, or when the read after a miss finds room:
        # another call created the row or settled in between (then this one is not refused).
        for _ in range(_RESERVE_TRIES):
            row = await conn.fetchrow(_RESERVE, *args)
            if row is None:
                return None
            if row["hold_id"] is not None:
                return Hold(row["hold_id"], row["api_key_id"], model, row["today"], row["month"])
            ledger = await conn.fetchrow(_LEDGER, row["api_key_id"], row["month"])
            if ledger is None:
                await conn.execute(_LEDGER_ROW, row["api_key_id"], row["month"], row["today"])
            elif (refusal := _refusal(row, ledger, usd, tokens)) is not None:
                raise refusal
    raise RuntimeError(f"job {job_id}: no budget hold after {_RESERVE_TRIES} tries (the ledger row kept changing)")


def _refusal(key: asyncpg.Record, ledger: asyncpg.Record, usd: Decimal, tokens: int) -> BudgetExceeded | None:
    """Which period and unit has no room (months first: the longer wait); None: every one has."""
    same_day = ledger["day"] == key["today"]
    checks: list[tuple[Period, Unit, Decimal | int | None, Decimal | int, Decimal | int]] = [
        ("month", "usd", key["monthly_usd"], ledger["month_usd"] + ledger["month_held_usd"], usd),
        ("month", "tokens", key["monthly_tokens"], ledger["month_tokens"] + ledger["month_held_tokens"], tokens),
        ("day", "usd", key["daily_usd"], (ledger["day_usd"] + ledger["day_held_usd"]) if same_day else 0, usd),
        ("day", "tokens", key["daily_tokens"],
         (ledger["day_tokens"] + ledger["day_held_tokens"]) if same_day else 0, tokens),
    ]
    for period, unit, limit, used, needed in checks:
        if limit is not None and used + needed > limit:
            return BudgetExceeded(period, unit, limit=limit, spent=used, needed=needed,
                                  resets=reset_at(period, key["today"]))
    return None


async def settle(pool: asyncpg.Pool, hold: Hold, *, calls: int, input_tokens: int, output_tokens: int,
                 usd: Decimal) -> None:
    """The hold replaced by what the call used; the spend recorded under the hold's day and model.
    A hold already released by the sweeper is not given back twice (its row is gone)."""
    async with pool.acquire() as conn:
        await conn.execute(_SETTLE, hold.id, hold.api_key_id, hold.month, hold.day, hold.model, calls,
                           input_tokens, output_tokens, usd)


async def release_stale(conn: asyncpg.Connection, *, ended_grace_s: float = 60.0) -> int:
    """Give back the holds whose call never settled; how many."""
    row = await conn.fetchrow(_RELEASE_STALE, ended_grace_s)
    return int(row["holds"]) if row is not None else 0


@dataclass(frozen=True)
class PeriodStatus:
    period: Period
    limit_usd: Decimal | None
    limit_tokens: int | None
    spent_usd: Decimal
    spent_tokens: int
    held_usd: Decimal
    held_tokens: int
    day: date  # the UTC day the status was read on

    @property
    def over(self) -> bool:
        """Spent up (LiteLLM's rule): settled spend at or past a limit."""
        return (self.limit_usd is not None and self.spent_usd >= self.limit_usd) or \
            (self.limit_tokens is not None and self.spent_tokens >= self.limit_tokens)


@dataclass(frozen=True)
class KeyBudgetStatus:
    api_key_id: str
    day: PeriodStatus
    month: PeriodStatus

    def exceeded(self) -> BudgetExceeded | None:
        """The spent-up period (the month first: its reset is the later one), or None."""
        for status in (self.month, self.day):
            if not status.over:
                continue
            usd = status.limit_usd is not None and status.spent_usd >= status.limit_usd
            limit = status.limit_usd if usd else status.limit_tokens
            assert limit is not None
            return BudgetExceeded(status.period, "usd" if usd else "tokens", limit=limit,
                                  spent=status.spent_usd if usd else status.spent_tokens, needed=0,
                                  resets=reset_at(status.period, status.day))
        return None


_STATUS = """
    SELECT a.id AS api_key_id,
           COALESCE(a.daily_budget_usd, $2::numeric) AS daily_usd,
           COALESCE(a.monthly_budget_usd, $3::numeric) AS monthly_usd,
           COALESCE(a.daily_budget_tokens, $4::bigint) AS daily_tokens,
           COALESCE(a.monthly_budget_tokens, $5::bigint) AS monthly_tokens,
           t.today, l.day, l.month_usd, l.month_tokens, l.day_usd, l.day_tokens,
           l.month_held_usd, l.month_held_tokens, l.day_held_usd, l.day_held_tokens
    FROM api_keys a
    CROSS JOIN (SELECT (now() AT TIME ZONE 'UTC')::date AS today) t
    LEFT JOIN key_budget_ledger l ON l.api_key_id = a.id AND l.month = date_trunc('month', t.today)::date
    WHERE ($1::text[] IS NULL OR a.id = ANY($1::text[])) AND ($1::text[] IS NOT NULL OR a.revoked_at IS NULL)
    ORDER BY a.created_at, a.id
"""


async def budget_statuses(
    db: asyncpg.Pool | asyncpg.Connection, key_ids: list[str] | None, defaults: BudgetLimits,
) -> list[KeyBudgetStatus]:
    """The keys' budgets now (None: every active key): limits, spent and held per period."""
    rows = await db.fetch(_STATUS, key_ids, defaults.daily_usd, defaults.monthly_usd, defaults.daily_tokens,
                          defaults.monthly_tokens)
    return [_status(r) for r in rows]


def _status(r: asyncpg.Record) -> KeyBudgetStatus:
    today: date = r["today"]
    has_month = r["day"] is not None
    same_day = has_month and r["day"] == today

    def value(column: str, present: bool) -> Decimal:
        return Decimal(r[column]) if present else Decimal(0)

    day = PeriodStatus("day", r["daily_usd"], r["daily_tokens"], value("day_usd", same_day),
                       int(value("day_tokens", same_day)), value("day_held_usd", same_day),
                       int(value("day_held_tokens", same_day)), today)
    month = PeriodStatus("month", r["monthly_usd"], r["monthly_tokens"], value("month_usd", has_month),
                         int(value("month_tokens", has_month)), value("month_held_usd", has_month),
                         int(value("month_held_tokens", has_month)), today)
    return KeyBudgetStatus(r["api_key_id"], day, month)


@dataclass(frozen=True)
class SpendRow:
    api_key_id: str
    day: date
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal


async def spend_by_day(
    db: asyncpg.Pool | asyncpg.Connection, key_id: str | None, first: date, last: date,
) -> list[SpendRow]:
    """Settled spend per key, UTC day and model, `first`..`last` inclusive (key None: every key)."""
    rows = await db.fetch(
        """
        SELECT api_key_id, day, model, calls, input_tokens, output_tokens, cost_usd FROM key_spend
        WHERE ($1::text IS NULL OR api_key_id = $1) AND day BETWEEN $2 AND $3
        ORDER BY day, api_key_id, model
        """,
        key_id, first, last,
    )
    return [SpendRow(**dict(r)) for r in rows]
