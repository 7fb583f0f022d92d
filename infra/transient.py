"""The one transient-error policy: which failures mean "a dependency is briefly down" (the same
work may succeed shortly), for PostgreSQL and Redis by exception type, and for calls to the
outside (LLM and embeddings endpoints, the Qdrant server, webhook targets) by HTTP status, with
the server's `Retry-After` hint."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import asyncpg
import redis.exceptions

# PostgreSQL unreachable, restarting or cutting connections: the same work may succeed shortly
# on a new connection (SPEC: Postgres down -> the API answers 503; a worker retries).
POSTGRES_DOWN: tuple[type[Exception], ...] = (
    ConnectionError,  # refused / reset: the server is down
    asyncpg.PostgresConnectionError,  # the connection was lost mid-statement
    asyncpg.InterfaceError,  # the pool's connection is closed
    asyncpg.exceptions.CannotConnectNowError,  # starting up or shutting down
    asyncpg.exceptions.AdminShutdownError,  # the backend was terminated
    asyncpg.exceptions.CrashShutdownError,
)

# Redis unreachable, frozen or restarting: the same request may succeed shortly (-> 503).
REDIS_DOWN: tuple[type[Exception], ...] = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)

# What a job may meet while a service is briefly unavailable, not because the job is broken:
# the runner re-queues it (workers/tasks/jobs.py adds the broker's own error, which only
# workers/ may name). A search task that could not reach PostgreSQL sends back
# `DatabaseUnavailable`, a ConnectionError.
DEPENDENCY_DOWN: tuple[type[Exception], ...] = (
    OSError,
    *POSTGRES_DOWN,
    *REDIS_DOWN,
    asyncpg.exceptions.TooManyConnectionsError,
)

# A read of operations figures (status, ops summary) that failed because a store is down or
# answered with an error: reported as "unavailable", never raised as a 500.
STORES_UNREADABLE: tuple[type[Exception], ...] = (
    OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, redis.exceptions.RedisError,
)

# A Redis call that failed in any way (down, frozen, or an error reply).
REDIS_FAILED: tuple[type[Exception], ...] = (redis.exceptions.RedisError, OSError)

# Besides every 5xx: timeout, too early, too many requests. Any other 4xx is the request's fault.
RETRYABLE_STATUS = frozenset({408, 425, 429})


def retryable_status(code: int) -> bool:
    return code >= 500 or code in RETRYABLE_STATUS


def parse_retry_after(value: str | None) -> float | None:
    """A `Retry-After` header's seconds: delta-seconds or an HTTP date; garbage is no hint."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None
