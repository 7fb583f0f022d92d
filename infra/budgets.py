"""Per-key LLM budgets (issue 27): the UTC periods, their reset times, the limits that apply to a
key, what a call costs, and the port the router and the RAG answer reserve through.

The worker side implements `SpendLedger` (workers/spend.py, SQL in infra/db/budgets.py): before
an LLM call its worst case (prompt estimate + max output tokens, priced) is held from the key's
day and month budgets in one statement; after it the hold is settled with what the call used.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, Literal, Protocol

from infra.results import Usage
from infra.settings import Settings

Period = Literal["day", "month"]
Unit = Literal["usd", "tokens"]
MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class BudgetLimits:
    """Budgets of one key; None = unlimited (for a key's own: follow the deployment's default)."""

    daily_usd: Decimal | None = None
    monthly_usd: Decimal | None = None
    daily_tokens: int | None = None
    monthly_tokens: int | None = None

    @classmethod
    def defaults(cls, settings: Settings) -> BudgetLimits:
        return cls(settings.key_daily_budget_usd, settings.key_monthly_budget_usd,
                   settings.key_daily_budget_tokens, settings.key_monthly_budget_tokens)

    def over(self, defaults: BudgetLimits) -> BudgetLimits:
        """These (a key's own), each unset one taken from `defaults`."""
        return BudgetLimits(
            self.daily_usd if self.daily_usd is not None else defaults.daily_usd,
            self.monthly_usd if self.monthly_usd is not None else defaults.monthly_usd,
            self.daily_tokens if self.daily_tokens is not None else defaults.daily_tokens,
            self.monthly_tokens if self.monthly_tokens is not None else defaults.monthly_tokens,
        )

    @property
    def unlimited(self) -> bool:
        return self.daily_usd is None and self.monthly_usd is None and self.daily_tokens is None \
            and self.monthly_tokens is None



def month_start(day: date) -> date:
    return day.replace(day=1)


def reset_at(period: Period, day: date) -> datetime:
    """When the period that contains `day` (UTC) rolls over: the next midnight, or the next month's first."""
    if period == "day":
        return datetime.combine(date.fromordinal(day.toordinal() + 1), time(), UTC)
    first = month_start(day)
    following = first.replace(year=first.year + 1, month=1) if first.month == 12 else first.replace(month=first.month + 1)
    return datetime.combine(following, time(), UTC)


def call_cost(settings: Settings, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    """What a call of `model` costs by the price table, exactly (0 for a model not in it)."""
    price = settings.llm_prices.get(model)
    if price is None:
        return Decimal(0)
    return (input_tokens * Decimal(str(price.input)) + output_tokens * Decimal(str(price.output))) / MILLION


def iso_z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class BudgetExceeded(Exception):
    """A key's budget has no room for this call (or, at submission, is spent)."""

    def __init__(self, period: Period, unit: Unit, *, limit: Decimal | int, spent: Decimal | int,
                 needed: Decimal | int, resets: datetime) -> None:
        self.period, self.unit, self.limit, self.spent, self.needed, self.resets = period, unit, limit, spent, needed, resets
        self.usage: Usage | None = None  # what the refused job step had spent before (a RAG answer's first ask)
        what = "daily" if period == "day" else "monthly"
        amount = (lambda v: f"${float(v):.6g}") if unit == "usd" else (lambda v: f"{int(v)} tokens")
        why = f"this LLM call needs up to {amount(needed)}" if needed else "it is spent"
        super().__init__(
            f"the API key's {what} budget of {amount(limit)} has {amount(max(limit - spent, 0))} left and {why}; "
            f"it resets at {iso_z(resets)}"
        )

    @property
    def message(self) -> str:
        return str(self)

    @property
    def retry_after_s(self) -> int:
        return max(1, int((self.resets - datetime.now(UTC)).total_seconds()) + 1)

    def details(self) -> dict[str, Any]:
        """The error's `details` (camelCase on the wire, JSON numbers)."""
        number = float if self.unit == "usd" else int
        return {"period": self.period, "unit": self.unit, "limit": number(self.limit),
                "spent": number(self.spent), "needed": number(self.needed), "resetAt": iso_z(self.resets)}

    @classmethod
    def from_details(cls, details: dict[str, Any]) -> BudgetExceeded:
        """Rebuilt from `details()` (a RAG task's reply carries it to the job runner)."""
        number = Decimal if details["unit"] == "usd" else int
        return cls(details["period"], details["unit"], limit=number(str(details["limit"])),
                   spent=number(str(details["spent"])), needed=number(str(details["needed"])),
                   resets=datetime.fromisoformat(details["resetAt"].replace("Z", "+00:00")))


@dataclass(frozen=True)
class Hold:
    """One call's reservation: settle it once with what the call used (`id` None: nothing held)."""

    id: int | None
    api_key_id: str
    model: str
    day: date
    month: date


class SpendLedger(Protocol):
    """The router's and the RAG answer's port to the per-key budgets."""

    async def reserve(self, job_id: str, model: str, input_tokens: int, output_tokens: int) -> Hold | None:
        """Hold the call's worst case from the job's key (None: the job has no key, nothing to hold),
        or raise `BudgetExceeded` when a period has no room for it."""

    async def settle(self, hold: Hold | None, input_tokens: int, output_tokens: int, *, calls: int = 1) -> None:
        """Replace the hold by what the call used (0 tokens: the call failed or was aborted)."""
