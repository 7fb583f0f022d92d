"""The asyncpg connection pool: the only way Turnout talks to PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from infra.settings import ConfigError

# A connection attempt that has not succeeded by then will not: the caller answers 503 (API) or
# retries (workers) instead of hanging on a frozen or unreachable server.
CONNECT_TIMEOUT_S = 5.0
# An idle connection is closed after this (asyncpg's default is 300 s): after a server restart, fewer
# dead connections wait in a pool. A worker's loop runs only in tasks; it catches up on these timers
# before each one (workers/_runtime.py), so an expired connection is replaced, not handed out.
INACTIVE_LIFETIME_S = 60.0


class DatabaseUnavailable(ConnectionError):
    """A worker's task could not reach PostgreSQL, also after retrying. A `ConnectionError`, so
    it reaches the task's caller as the transient failure it is (Celery sends it back by name)."""


async def _connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
    """`asyncpg.connect`, with every way of not reaching the server raised as a ConnectionError.

    Over a unix socket (the embedded default) a stopped server is a socket file that is gone:
    `FileNotFoundError`, which is no ConnectionError; a connect timeout is a `TimeoutError`."""
    try:
        conn: asyncpg.Connection = await asyncpg.connect(*args, **kwargs)
    except ConnectionError:
        raise
    except OSError as exc:  # FileNotFoundError, TimeoutError, PermissionError on the socket...
        raise DatabaseUnavailable(f"cannot reach PostgreSQL: {type(exc).__name__}: {exc}") from exc
    return conn


async def _init_connection(conn: asyncpg.Connection) -> None:
    # jsonb in and out as Python objects, everywhere.
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release without asyncpg's reset query (advisory unlock, CLOSE ALL, UNLISTEN, RESET ALL), a
    round trip on every release. Turnout keeps no session state on pooled connections: settings
    are transaction-local (`set_config(..., true)`), advisory locks transaction-scoped, LISTEN on a
    dedicated connection. asyncpg still rolls back a transaction left open before calling this."""


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10, **kwargs: Any) -> asyncpg.Pool:
    """Open a pool, or stop with a message that says what to do."""
    if not dsn:
        raise ConfigError("TURNOUT_DATABASE_URL is not set (or run `turnout up` for the embedded default)")
    kwargs.setdefault("timeout", CONNECT_TIMEOUT_S)
    kwargs.setdefault("max_inactive_connection_lifetime", INACTIVE_LIFETIME_S)
    try:
        pool = await asyncpg.create_pool(
            dsn, min_size=min_size, max_size=max_size, init=_init_connection, reset=_keep_session,
            connect=_connect, command_timeout=60, **kwargs
        )
    except (OSError, asyncpg.PostgresError) as exc:
        raise ConfigError(f"cannot connect to PostgreSQL at {redact(dsn)}: {exc}") from exc
    assert pool is not None
    return pool


def redact(dsn: str) -> str:
    """A DSN without its password, for messages."""
    if "@" not in dsn or "://" not in dsn:
        return dsn
    scheme, rest = dsn.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else f"{scheme}://{user}@{host}"
