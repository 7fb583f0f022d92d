"""Collection versions: which vector collections exist, their model and dimension, which one
serves reads (``active``; at most one, enforced by a unique partial index)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg


@dataclass(frozen=True)
class CollectionVersion:
    name: str
    model: str
    dimension: int
    chunking: str | None
    active: bool
    created_at: datetime
    activated_at: datetime | None


_SELECT = "SELECT name, model, dimension, chunking, active, created_at, activated_at FROM collection_versions"


def _version(row: asyncpg.Record) -> CollectionVersion:
    return CollectionVersion(**dict(row))


async def create_version(
    conn: asyncpg.Connection, *, name: str, model: str, dimension: int, chunking: str
) -> CollectionVersion:
    row = await conn.fetchrow(
        "INSERT INTO collection_versions (name, model, dimension, chunking) VALUES ($1, $2, $3, $4) "
        "RETURNING name, model, dimension, chunking, active, created_at, activated_at",
        name, model, dimension, chunking,
    )
    return _version(row)


async def active_version(conn: asyncpg.Connection | asyncpg.Pool) -> CollectionVersion | None:
    row = await conn.fetchrow(_SELECT + " WHERE active")
    return _version(row) if row else None


async def get_version(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> CollectionVersion | None:
    row = await conn.fetchrow(_SELECT + " WHERE name = $1", name)
    return _version(row) if row else None




async def activate_version(conn: asyncpg.Connection, name: str) -> None:
    """Make ``name`` the one active version, in one transaction: readers see the old or the new."""
    async with conn.transaction():
        await conn.execute("UPDATE collection_versions SET active = false WHERE active AND name <> $1", name)
        result: str = await conn.execute(
            "UPDATE collection_versions SET active = true, activated_at = now() WHERE name = $1 AND NOT active",
            name,
        )
        if result == "UPDATE 0" and not await conn.fetchval(
            "SELECT active FROM collection_versions WHERE name = $1", name
        ):
            raise LookupError(f"no collection version {name!r}")


async def retired_versions(conn: asyncpg.Connection | asyncpg.Pool, *, keep_previous: int = 1) -> list[str]:
    """Inactive versions that may be dropped: all but the ``keep_previous`` most recently
    active ones (kept for rollback) and those a queued/running re-embedding run writes into."""
    rows = await conn.fetch(
        """
        WITH kept AS (
            SELECT name FROM collection_versions
            WHERE NOT active AND activated_at IS NOT NULL
            ORDER BY activated_at DESC LIMIT $1
        )
        SELECT name FROM collection_versions v
        WHERE NOT active
          AND name NOT IN (SELECT name FROM kept)
          AND NOT EXISTS (SELECT 1 FROM reembed_runs r
                          WHERE r.collection = v.name AND r.status IN ('queued', 'running'))
        ORDER BY created_at
        """,
        keep_previous,
    )
    return [r["name"] for r in rows]


async def delete_version(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> None:
    await conn.execute("DELETE FROM collection_versions WHERE name = $1 AND NOT active", name)
