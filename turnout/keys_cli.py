"""`turnout keys ...`: create, list, update (budgets) and revoke API keys."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, TypeVar

import asyncpg
import typer
from rich.console import Console
from rich.table import Table

from infra.budgets import BudgetLimits
from infra.db.api_keys import create_key, key_budgets, key_row_budgets, list_keys, revoke_key, set_budgets
from infra.db.pool import create_pool
from infra.settings import get_settings

keys_app = typer.Typer(help="Manage API keys (stored hashed; a key is shown once).", no_args_is_help=True)
out = Console()
T = TypeVar("T")


async def _with_conn(fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    settings = get_settings()
    settings.require_services(redis=False)
    pool = await create_pool(settings.database_url, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            return await fn(conn)
    finally:
        await pool.close()


DEFAULT = "default"  # an update's value for "follow the deployment's default again"
_BUDGET_HELP = "USD per UTC {period} (e.g. 5 or 0.25); `default`: the TURNOUT_KEY_{env} default"
DailyUsd = Annotated[str | None, typer.Option(help=_BUDGET_HELP.format(period="day", env="DAILY_BUDGET_USD"))]
MonthlyUsd = Annotated[str | None, typer.Option(help=_BUDGET_HELP.format(period="month", env="MONTHLY_BUDGET_USD"))]
DailyTokens = Annotated[str | None, typer.Option(help="tokens per UTC day; `default`: TURNOUT_KEY_DAILY_BUDGET_TOKENS")]
MonthlyTokens = Annotated[str | None,
                          typer.Option(help="tokens per UTC month; `default`: TURNOUT_KEY_MONTHLY_BUDGET_TOKENS")]


def _parse(option: str, value: str, kind: type[Decimal] | type[int]) -> Decimal | int | None:
    if value == DEFAULT:
        return None
    try:
        parsed = kind(value)
    except (InvalidOperation, ValueError):
        raise typer.BadParameter(f"{value!r} is not a number (or `{DEFAULT}`)", param_hint=option) from None
    if (isinstance(parsed, Decimal) and not parsed.is_finite()) or parsed < 0:
        raise typer.BadParameter("must be a number >= 0", param_hint=option)
    return parsed


def _budgets(base: BudgetLimits, daily_usd: str | None, monthly_usd: str | None, daily_tokens: str | None,
             monthly_tokens: str | None) -> BudgetLimits:
    """`base` with each given option applied."""
    changes: dict[str, Any] = {}
    for field, option, value, kind in (
        ("daily_usd", "--daily-usd", daily_usd, Decimal), ("monthly_usd", "--monthly-usd", monthly_usd, Decimal),
        ("daily_tokens", "--daily-tokens", daily_tokens, int),
        ("monthly_tokens", "--monthly-tokens", monthly_tokens, int),
    ):
        if value is not None:
            changes[field] = _parse(option, value, kind)
    return replace(base, **changes)


def _shown(budgets: BudgetLimits) -> str:
    parts = [f"{label} {value}" for label, value in (
        ("day $", budgets.daily_usd), ("month $", budgets.monthly_usd), ("day tokens", budgets.daily_tokens),
        ("month tokens", budgets.monthly_tokens)) if value is not None]
    return ", ".join(parts) or "defaults"


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Option(help="who the key is for")],
    admin: Annotated[bool, typer.Option(help="may use admin routes")] = False,
    daily_usd: DailyUsd = None, monthly_usd: MonthlyUsd = None, daily_tokens: DailyTokens = None,
    monthly_tokens: MonthlyTokens = None,
) -> None:
    """Create a key and print it (once) with its webhook signing secret."""
    budgets = _budgets(BudgetLimits(), daily_usd, monthly_usd, daily_tokens, monthly_tokens)
    issued = asyncio.run(_with_conn(lambda conn: create_key(conn, name, is_admin=admin, budgets=budgets)))
    out.print(f"key:            {issued.token}")
    out.print(f"webhook secret: {issued.key.webhook_secret}")
    out.print(f"budgets:        {_shown(budgets)}")
    out.print("Store both now; the key cannot be shown again.", style="yellow")


@keys_app.command("update")
def update(
    key_id: str, daily_usd: DailyUsd = None, monthly_usd: MonthlyUsd = None, daily_tokens: DailyTokens = None,
    monthly_tokens: MonthlyTokens = None,
) -> None:
    """Change a key's budgets (the options given; the others stay). Takes effect on its next LLM call."""

    async def apply(conn: asyncpg.Connection) -> BudgetLimits | None:
        async with conn.transaction():
            current = await key_budgets(conn, key_id)
            if current is None:
                return None
            budgets = _budgets(current, daily_usd, monthly_usd, daily_tokens, monthly_tokens)
            await set_budgets(conn, key_id, budgets)
            return budgets

    budgets = asyncio.run(_with_conn(apply))
    if budgets is None:
        out.print(f"no key {key_id}", style="red")
        raise typer.Exit(1)
    out.print(f"{key_id} budgets: {_shown(budgets)}")


@keys_app.command("list")
def list_() -> None:
    rows = asyncio.run(_with_conn(list_keys))
    table = Table("id", "name", "admin", "created", "revoked", "budgets")
    for r in rows:
        own = key_row_budgets(r)
        table.add_row(r["id"], r["name"], "yes" if r["is_admin"] else "", str(r["created_at"])[:19],
                      str(r["revoked_at"] or "")[:19], _shown(own))
    out.print(table)


@keys_app.command("revoke")
def revoke(key_id: str) -> None:
    if not asyncio.run(_with_conn(lambda conn: revoke_key(conn, key_id))):
        out.print(f"no active key {key_id}", style="red")
        raise typer.Exit(1)
    out.print(f"revoked {key_id}")
