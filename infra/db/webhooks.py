"""Webhook deliveries (one per job, unique) and their attempts; dead letters are `status = 'dead'`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import asyncpg

DeliveryStatus = Literal["pending", "delivered", "dead"]
AttemptOutcome = Literal["delivered", "retry", "dead"]

# A countdown message may fire slightly before `next_attempt_at` (clock skew between hosts).
_DUE_SLACK_S = 2.0


@dataclass(frozen=True)
class Delivery:
    id: int
    job_id: str
    api_key_id: str | None
    url: str
    status: DeliveryStatus
    attempts: int
    next_attempt_at: datetime
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


@dataclass(frozen=True)
class Attempt:
    attempt: int
    status_code: int | None
    error: str | None
    latency_ms: float | None
    created_at: datetime


_DELIVERY_COLUMNS = """
    d.id, d.job_id, j.api_key_id, d.url, d.status, d.attempts, d.next_attempt_at, d.last_status_code,
    d.last_error, d.created_at, d.delivered_at
"""


def _delivery(row: asyncpg.Record) -> Delivery:
    return Delivery(
        row["id"], row["job_id"], row["api_key_id"], row["url"], row["status"], row["attempts"],
        row["next_attempt_at"], row["last_status_code"], row["last_error"], row["created_at"], row["delivered_at"],
    )


async def claim_delivery(conn: asyncpg.Connection, delivery_id: int, *, hold_s: float) -> Delivery | None:
    """Take the next attempt of a due, pending delivery; None when it is not due, done or held.

    The claim pushes `next_attempt_at` past the attempt's duration, so a duplicate message
    arriving meanwhile finds it not due and does nothing.
    """
    row = await conn.fetchrow(
        f"""
        WITH claimed AS (
            UPDATE webhook_deliveries
            SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $2)
            WHERE id = $1 AND status = 'pending' AND next_attempt_at <= now() + make_interval(secs => $3)
            RETURNING *
        )
        SELECT {_DELIVERY_COLUMNS} FROM claimed d JOIN jobs j ON j.id = d.job_id
        """,  # noqa: S608 (column list is a constant)
        delivery_id, hold_s, _DUE_SLACK_S,
    )
    return _delivery(row) if row is not None else None


async def finish_attempt(
    conn: asyncpg.Connection,
    delivery_id: int,
    *,
    attempt: int,
    outcome: AttemptOutcome,
    status_code: int | None,
    error: str | None,
    latency_ms: float,
    retry_in_s: float = 0.0,
) -> None:
    """Record one attempt and move the delivery on: delivered, retried later, or dead-lettered."""
    async with conn.transaction():
        await conn.execute(
            "INSERT INTO webhook_attempts (delivery_id, attempt, status_code, error, latency_ms) "
            "VALUES ($1, $2, $3, $4, $5)",
            delivery_id, attempt, status_code, error, latency_ms,
        )
        await conn.execute(
            """
            UPDATE webhook_deliveries SET
                status = CASE $2::text WHEN 'delivered' THEN 'delivered' WHEN 'dead' THEN 'dead' ELSE 'pending' END,
                next_attempt_at = now() + make_interval(secs => $3),
                delivered_at = CASE WHEN $2::text = 'delivered' THEN now() END,
                last_status_code = $4, last_error = $5
            WHERE id = $1
            """,
            delivery_id, outcome, retry_in_s, status_code, error,
        )


async def take_overdue(conn: asyncpg.Connection, *, grace_s: float, limit: int = 100) -> list[int]:
    """Pending deliveries whose message was lost (due long ago); marks them due now for a fresh message."""
    rows = await conn.fetch(
        """
        UPDATE webhook_deliveries SET next_attempt_at = now()
        WHERE id IN (
            SELECT id FROM webhook_deliveries
            WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => $1)
            ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED
        )
        RETURNING id
        """,
        grace_s, limit,
    )
    return [r["id"] for r in rows]


async def list_deliveries(
    conn: asyncpg.Connection,
    *,
    api_key_id: str | None,
    status: DeliveryStatus | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Delivery]:
    """Newest first; `api_key_id` None = every key's deliveries (admin)."""
    rows = await conn.fetch(
        f"""
        SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id
        WHERE ($1::text IS NULL OR j.api_key_id = $1) AND ($2::text IS NULL OR d.status = $2)
          AND ($3::bigint IS NULL OR d.id < $3)
        ORDER BY d.id DESC LIMIT $4
        """,  # noqa: S608 (column list is a constant)
        api_key_id, status, before_id, limit,
    )
    return [_delivery(r) for r in rows]


async def get_delivery(conn: asyncpg.Connection, delivery_id: int, *, api_key_id: str | None) -> Delivery | None:
    row = await conn.fetchrow(
        f"""
        SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id
        WHERE d.id = $1 AND ($2::text IS NULL OR j.api_key_id = $2)
        """,  # noqa: S608 (column list is a constant)
        delivery_id, api_key_id,
    )
    return _delivery(row) if row is not None else None


async def delivery_for_job(conn: asyncpg.Connection, job_id: str) -> Delivery | None:
    row = await conn.fetchrow(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id WHERE d.job_id = $1",  # noqa: S608
        job_id,
    )
    return _delivery(row) if row is not None else None


async def list_attempts(conn: asyncpg.Connection, delivery_id: int) -> list[Attempt]:
    rows = await conn.fetch(
        "SELECT attempt, status_code, error, latency_ms, created_at FROM webhook_attempts "
        "WHERE delivery_id = $1 ORDER BY attempt, id",
        delivery_id,
    )
    return [Attempt(r["attempt"], r["status_code"], r["error"], r["latency_ms"], r["created_at"]) for r in rows]


async def signing_secret(conn: asyncpg.Connection, job_id: str) -> str | None:
    """The webhook secret of the key that submitted the job."""
    secret: str | None = await conn.fetchval(
        "SELECT k.webhook_secret FROM jobs j JOIN api_keys k ON k.id = j.api_key_id WHERE j.id = $1", job_id
    )
    return secret
