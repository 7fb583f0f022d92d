"""API keys: `<id>.<secret>`; only sha256(secret) is stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from infra.webhook_signing import new_secret


@dataclass(frozen=True)
class ApiKey:
    id: str
    name: str
    is_admin: bool
    webhook_secret: str


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    token: str  # shown once


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def create_key(conn: asyncpg.Connection, name: str, *, is_admin: bool = False) -> IssuedKey:
    key_id = "tk_" + secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    webhook_secret = new_secret()  # Standard Webhooks: whsec_ + base64 of 32 random bytes
    await conn.execute(
        "INSERT INTO api_keys (id, name, key_hash, webhook_secret, is_admin) VALUES ($1, $2, $3, $4, $5)",
        key_id, name, _hash(secret), webhook_secret, is_admin,
    )
    return IssuedKey(ApiKey(key_id, name, is_admin, webhook_secret), f"{key_id}.{secret}")


async def verify_token(conn: asyncpg.Connection, token: str) -> ApiKey | None:
    key_id, _, secret = token.partition(".")
    if not key_id or not secret:
        return None
    row = await conn.fetchrow(
        "SELECT id, name, key_hash, webhook_secret, is_admin FROM api_keys WHERE id = $1 AND revoked_at IS NULL",
        key_id,
    )
    if row is None or not hmac.compare_digest(row["key_hash"], _hash(secret)):
        return None
    return ApiKey(row["id"], row["name"], row["is_admin"], row["webhook_secret"])


async def revoke_key(conn: asyncpg.Connection, key_id: str) -> bool:
    result: str = await conn.execute(
        "UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL", key_id
    )
    return result.endswith(" 1")


async def list_keys(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return list(await conn.fetch("SELECT id, name, is_admin, created_at, revoked_at FROM api_keys ORDER BY created_at"))


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
