"""Creating a database on a server (the embedded default creates `turnout` on first start)."""

from __future__ import annotations

import re

import asyncpg

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


async def ensure_database(admin_dsn: str, name: str) -> bool:
    """Create database ``name`` unless it exists; True when it was created."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"database name {name!r}: use lowercase letters, digits and '_' (at most 63)")
    conn = await asyncpg.connect(admin_dsn)
    try:
        if await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            return False
        await conn.execute(f'CREATE DATABASE "{name}"')  # identifiers cannot be bound; checked above
        return True
    finally:
        await conn.close()
