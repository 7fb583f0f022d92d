"""Webhook deliveries (one per job, unique), their attempts, endpoint health and recovery.

Dead letters are `status = 'dead'`; `disabled` = not sent because its endpoint was disabled
(migration 0005's trigger files every new delivery under its endpoint, per API key and origin).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import asyncpg

DeliveryStatus = Literal["pending", "delivered", "dead", "disabled"]
AttemptOutcome = Literal["delivered", "retry", "dead", "disabled"]
EndpointResult = Literal["ok", "failed", "gone"]  # gone = 410: the receiver says it is gone for good
RecoverableStatus = Literal["dead", "disabled"]
WebhookAction = Literal["redeliver", "recover", "enable", "rotate_secret"]
DISABLED_ERROR = "endpoint disabled: not sent (enable it, then recover)"

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
    endpoint_id: int | None
    round_attempts: int  # attempts since it was (re)queued: the position in the retry schedule


@dataclass(frozen=True)
class Endpoint:
    id: int
    api_key_id: str
    origin: str
    consecutive_failures: int
    failing_since: datetime | None
    last_failure_at: datetime | None
    last_success_at: datetime | None
    disabled_at: datetime | None
    disabled_reason: str | None
    created_at: datetime


@dataclass(frozen=True)
class Attempt:
    attempt: int
    status_code: int | None
    error: str | None
    latency_ms: float | None
    created_at: datetime


_DELIVERY_COLUMNS = """
    d.id, d.job_id, j.api_key_id, d.url, d.status, d.attempts, d.next_attempt_at, d.last_status_code,
    d.last_error, d.created_at, d.delivered_at, d.endpoint_id, d.round_attempts
"""


def _delivery(row: asyncpg.Record) -> Delivery:
    return Delivery(
        row["id"], row["job_id"], row["api_key_id"], row["url"], row["status"], row["attempts"],
        row["next_attempt_at"], row["last_status_code"], row["last_error"], row["created_at"], row["delivered_at"],
        row["endpoint_id"], row["round_attempts"],
    )


async def claim_delivery(conn: asyncpg.Connection, delivery_id: int, *, hold_s: float) -> Delivery | None:
    """Take the next attempt of a due, pending delivery; None when it is not due, done or held.

    The claim pushes `next_attempt_at` past the attempt's duration, so a duplicate message
    arriving meanwhile finds it not due and does nothing. A pending delivery whose endpoint has
    been disabled meanwhile becomes `disabled` instead (nothing is sent).
    """
    await conn.execute(
        """
        UPDATE webhook_deliveries d SET status = 'disabled', last_error = $2
        FROM webhook_endpoints e
        WHERE d.id = $1 AND d.status = 'pending' AND e.id = d.endpoint_id AND e.disabled_at IS NOT NULL
        """,
        delivery_id, DISABLED_ERROR,
    )
    row = await conn.fetchrow(
        f"""
        WITH claimed AS (
            UPDATE webhook_deliveries
            SET attempts = attempts + 1, round_attempts = round_attempts + 1, next_attempt_at = now() + make_interval(secs => $2)
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
    endpoint_id: int | None = None,
    endpoint_result: EndpointResult | None = None,
    disable_after_s: float = 3 * 86_400.0,
) -> AttemptOutcome:
    """Record one attempt, update its endpoint's health and move the delivery on: delivered,
    retried later, dead-lettered, or `disabled` when this failure disabled the endpoint (then
    every other pending delivery to it is `disabled` too). Returns the outcome applied."""
    async with conn.transaction():
        if endpoint_id is not None and endpoint_result is not None:
            if await _endpoint_health(conn, endpoint_id, endpoint_result, disable_after_s) and outcome == "retry":
                outcome, error = "disabled", f"{error}; {DISABLED_ERROR}"
        await conn.execute(
            "INSERT INTO webhook_attempts (delivery_id, attempt, status_code, error, latency_ms) "
            "VALUES ($1, $2, $3, $4, $5)",
            delivery_id, attempt, status_code, error, latency_ms,
        )
        await conn.execute(
            """
            UPDATE webhook_deliveries SET
                status = CASE $2::text WHEN 'retry' THEN 'pending' ELSE $2::text END,
                next_attempt_at = now() + make_interval(secs => $3),
                delivered_at = CASE WHEN $2::text = 'delivered' THEN now() END,
                last_status_code = $4, last_error = $5
            WHERE id = $1
            """,
            delivery_id, outcome, retry_in_s, status_code, error,
        )
    return outcome


async def _endpoint_health(
    conn: asyncpg.Connection, endpoint_id: int, result: EndpointResult, disable_after_s: float
) -> bool:
    """Count a success or failure; True when this failure disabled the endpoint (failing for
    longer than `disable_after_s` since the first failure of the streak, or a 410)."""
    if result == "ok":
        await conn.execute(
            "UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL, last_success_at = now() "
            "WHERE id = $1",
            endpoint_id,
        )
        return False
    row = await conn.fetchrow(
        """
        WITH before AS (SELECT id, disabled_at FROM webhook_endpoints WHERE id = $1 FOR UPDATE)
        UPDATE webhook_endpoints e SET
            consecutive_failures = e.consecutive_failures + 1,
            failing_since = coalesce(e.failing_since, now()),
            last_failure_at = now(),
            disabled_at = CASE WHEN e.disabled_at IS NULL AND ($2 OR e.failing_since < now() - make_interval(secs => $3))
                          THEN now() ELSE e.disabled_at END,
            disabled_reason = CASE WHEN e.disabled_at IS NOT NULL THEN e.disabled_reason
                              WHEN $2 THEN 'the receiver answered 410 Gone'
                              WHEN e.failing_since < now() - make_interval(secs => $3)
                              THEN format('failing since %s (longer than %s s)', e.failing_since, $3::int)
                              END
        FROM before WHERE e.id = before.id
        RETURNING before.disabled_at IS NULL AND e.disabled_at IS NOT NULL AS newly_disabled
        """,
        endpoint_id, result == "gone", disable_after_s,
    )
    if row is None or not row["newly_disabled"]:
        return False
    await conn.execute(
        "UPDATE webhook_deliveries SET status = 'disabled', last_error = $2 WHERE endpoint_id = $1 AND status = 'pending'",
        endpoint_id, DISABLED_ERROR,
    )
    return True


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




async def list_attempts(conn: asyncpg.Connection, delivery_id: int) -> list[Attempt]:
    rows = await conn.fetch(
        "SELECT attempt, status_code, error, latency_ms, created_at FROM webhook_attempts "
        "WHERE delivery_id = $1 ORDER BY attempt, id",
        delivery_id,
    )
    return [Attempt(r["attempt"], r["status_code"], r["error"], r["latency_ms"], r["created_at"]) for r in rows]


async def signing_secrets(conn: asyncpg.Connection, job_id: str) -> list[str]:
    """The webhook secrets of the key that submitted the job: the current one, then the one a
    rotation replaced while its overlap window lasts. Empty when the key is gone."""
    row = await conn.fetchrow(
        """
        SELECT k.webhook_secret, CASE WHEN k.webhook_secret_previous_until > now() THEN k.webhook_secret_previous END
               AS previous
        FROM jobs j JOIN api_keys k ON k.id = j.api_key_id WHERE j.id = $1
        """,
        job_id,
    )
    if row is None:
        return []
    return [row["webhook_secret"], *([row["previous"]] if row["previous"] else [])]


_ENDPOINT_COLUMNS = """
    id, api_key_id, origin, consecutive_failures, failing_since, last_failure_at, last_success_at,
    disabled_at, disabled_reason, created_at
"""


def _endpoint(row: asyncpg.Record) -> Endpoint:
    return Endpoint(**{k: row[k] for k in Endpoint.__dataclass_fields__})


async def list_endpoints(conn: asyncpg.Connection, *, api_key_id: str | None) -> list[Endpoint]:
    """`api_key_id` None = every key's endpoints (admin)."""
    rows = await conn.fetch(
        f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE ($1::text IS NULL OR api_key_id = $1) ORDER BY id",  # noqa: S608
        api_key_id,
    )
    return [_endpoint(r) for r in rows]


async def get_endpoint(conn: asyncpg.Connection, endpoint_id: int, *, api_key_id: str | None) -> Endpoint | None:
    row = await conn.fetchrow(
        f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND ($2::text IS NULL OR api_key_id = $2)",  # noqa: S608
        endpoint_id, api_key_id,
    )
    return _endpoint(row) if row is not None else None


async def enable_endpoint(conn: asyncpg.Connection, endpoint_id: int, *, api_key_id: str | None) -> Endpoint | None:
    """Enable (and forget the failure streak of) an endpoint; enabling an enabled one changes nothing."""
    row = await conn.fetchrow(
        f"""
        UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, consecutive_failures = 0,
                                     failing_since = NULL
        WHERE id = $1 AND ($2::text IS NULL OR api_key_id = $2) AND disabled_at IS NOT NULL
        RETURNING {_ENDPOINT_COLUMNS}
        """,  # noqa: S608 (column list is a constant)
        endpoint_id, api_key_id,
    )
    if row is not None:
        return _endpoint(row)
    return await get_endpoint(conn, endpoint_id, api_key_id=api_key_id)


async def endpoint_disabled(conn: asyncpg.Connection, endpoint_id: int | None) -> bool:
    if endpoint_id is None:
        return False
    return bool(await conn.fetchval(
        "SELECT disabled_at IS NOT NULL FROM webhook_endpoints WHERE id = $1", endpoint_id
    ))


_REQUEUE = """
    status = 'pending', round_attempts = 0, next_attempt_at = now(), last_error = NULL, last_status_code = NULL,
    delivered_at = NULL
"""


async def redeliver(conn: asyncpg.Connection, delivery_id: int) -> bool:
    """Queue a delivery again (a new round of the retry schedule, the same delivery id, so the
    same `webhook-id`). False when it is already pending: nothing changes (idempotent)."""
    result: str = await conn.execute(
        f"UPDATE webhook_deliveries SET {_REQUEUE} WHERE id = $1 AND status <> 'pending'",  # noqa: S608
        delivery_id,
    )
    return result.endswith(" 1")


async def recover(
    conn: asyncpg.Connection, *, api_key_id: str, since: datetime, statuses: list[RecoverableStatus]
) -> tuple[list[int], int]:
    """Queue again this key's deliveries created since `since` that are dead or disabled, to
    endpoints that are enabled now. Returns (requeued ids, skipped because still disabled).
    A delivered or already pending delivery is never touched: a repeated call sends nothing twice."""
    rows = await conn.fetch(
        f"""
        WITH candidates AS (
            SELECT d.id, e.disabled_at IS NOT NULL AS blocked
            FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id
            LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id
            WHERE j.api_key_id = $1 AND d.created_at >= $2 AND d.status = ANY($3::text[])
            FOR UPDATE OF d
        ), requeued AS (
            UPDATE webhook_deliveries d SET {_REQUEUE}
            FROM candidates c WHERE d.id = c.id AND NOT c.blocked
            RETURNING d.id
        )
        SELECT id, false AS blocked FROM requeued
        UNION ALL SELECT id, true FROM candidates WHERE blocked
        """,  # noqa: S608 (constant fragment)
        api_key_id, since, list(statuses),
    )
    return sorted(r["id"] for r in rows if not r["blocked"]), sum(1 for r in rows if r["blocked"])


async def record_action(
    conn: asyncpg.Connection, *, api_key_id: str, action: WebhookAction, target: dict[str, object], affected: int
) -> None:
    """The audit of recovery: who redelivered, recovered, enabled or rotated what."""
    await conn.execute(
        "INSERT INTO webhook_actions (api_key_id, action, target, affected) VALUES ($1, $2, $3::jsonb, $4)",
        api_key_id, action, json.dumps(target, default=str), affected,
    )
