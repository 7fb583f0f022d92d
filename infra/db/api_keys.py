"""API keys: `<id>.<secret>`; only sha256(secret) is stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from datetime import datetime

import asyncpg

from infra.budgets import BudgetLimits
from infra.webhook_signing import new_secret

# A key's own budgets (migration 0013); NULL follows the deployment's defaults.
_BUDGET_COLUMNS = "daily_budget_usd, monthly_budget_usd, daily_budget_tokens, monthly_budget_tokens"


@dataclass(frozen=True)
class ApiKey:
    id: str
    name: str
    is_admin: bool
    webhook_secret: str
    budgets: BudgetLimits = field(default_factory=BudgetLimits)  # its own; unset ones follow the defaults


def key_row_budgets(row: asyncpg.Record) -> BudgetLimits:
    """A key row's own budgets (its `*_budget_*` columns)."""
    return BudgetLimits(row["daily_budget_usd"], row["monthly_budget_usd"], row["daily_budget_tokens"],
                        row["monthly_budget_tokens"])


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    token: str  # shown once


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def create_key(
    conn: asyncpg.Connection, name: str, *, is_admin: bool = False, budgets: BudgetLimits | None = None,
) -> IssuedKey:
    key_id = "tk_" + secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    webhook_secret = new_secret()  # Standard Webhooks: whsec_ + base64 of 32 random bytes
    own = budgets or BudgetLimits()
    await conn.execute(
        f"INSERT INTO api_keys (id, name, key_hash, webhook_secret, is_admin, {_BUDGET_COLUMNS}) "  # noqa: S608
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        key_id, name, _hash(secret), webhook_secret, is_admin,
        own.daily_usd, own.monthly_usd, own.daily_tokens, own.monthly_tokens,
    )
    return IssuedKey(ApiKey(key_id, name, is_admin, webhook_secret, own), f"{key_id}.{secret}")


async def set_budgets(conn: asyncpg.Connection, key_id: str, budgets: BudgetLimits) -> bool:
    """Set the key's own budgets (None: follow the default). The change is announced to the API
    processes' key caches (migration 0004), so the next request sees it."""
    result: str = await conn.execute(
        "UPDATE api_keys SET daily_budget_usd = $2, monthly_budget_usd = $3, daily_budget_tokens = $4, "
        "monthly_budget_tokens = $5 WHERE id = $1",
        key_id, budgets.daily_usd, budgets.monthly_usd, budgets.daily_tokens, budgets.monthly_tokens,
    )
    return result.endswith(" 1")


async def key_budgets(conn: asyncpg.Connection, key_id: str) -> BudgetLimits | None:
    """The key's own budgets (None: no such key)."""
    row = await conn.fetchrow(f"SELECT {_BUDGET_COLUMNS} FROM api_keys WHERE id = $1", key_id)  # noqa: S608
    return key_row_budgets(row) if row is not None else None


async def verify_token(conn: asyncpg.Connection, token: str) -> ApiKey | None:
    key_id, _, secret = token.partition(".")
    if not key_id or not secret:
        return None
    row = await conn.fetchrow(
        f"SELECT id, name, key_hash, webhook_secret, is_admin, {_BUDGET_COLUMNS} "  # noqa: S608
        "FROM api_keys WHERE id = $1 AND revoked_at IS NULL",
        key_id,
    )
    if row is None or not hmac.compare_digest(row["key_hash"], _hash(secret)):
        return None
    return ApiKey(row["id"], row["name"], row["is_admin"], row["webhook_secret"], key_row_budgets(row))


async def revoke_key(conn: asyncpg.Connection, key_id: str) -> bool:
    result: str = await conn.execute(
        "UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL", key_id
    )
    return result.endswith(" 1")


async def list_keys(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return list(await conn.fetch(
        f"SELECT id, name, is_admin, created_at, revoked_at, {_BUDGET_COLUMNS} FROM api_keys ORDER BY created_at"  # noqa: S608
    ))


async def rotate_webhook_secret(conn: asyncpg.Connection, key_id: str, *, overlap_s: float) -> tuple[str, datetime]:
    """Give the key a new (Standard Webhooks) webhook secret; the replaced one keeps signing
    next to it for `overlap_s`, so receivers can switch without missing a delivery. Returns the
    new secret and when the old one stops signing."""
    secret = new_secret()
    until: datetime | None = await conn.fetchval(
        """
        UPDATE api_keys SET webhook_secret_previous = webhook_secret, webhook_secret = $2,
                            webhook_secret_previous_until = now() + make_interval(secs => $3)
        WHERE id = $1 RETURNING webhook_secret_previous_until
        """,
        key_id, secret, overlap_s,
    )
    assert until is not None  # the caller's own key: it authenticated this request
    return secret, until
