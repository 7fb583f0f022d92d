"""Cutting a worker's PostgreSQL connection in the middle of a statement, on cue.

The test holds `LOCK TABLE localizations IN ACCESS EXCLUSIVE MODE` in a transaction; a worker's
read of that table (a search, a RAG answer's sources) then waits behind it, and
`terminate_blocked_reads` terminates that waiting backend (the worker sees `terminating
connection due to administrator command`), as a PostgreSQL restart would.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

LOCK_LOCALIZATIONS = "LOCK TABLE localizations IN ACCESS EXCLUSIVE MODE"


async def terminate_blocked_reads(db: asyncpg.Pool, reply: asyncio.Future[Any], *, times: int) -> int:
    """Terminate the backend reading `localizations` behind the test's lock, each time one waits,
    up to `times` times or until `reply` is done; how many were terminated."""
    terminated: set[int] = set()
    async with db.acquire() as conn:
        while len(terminated) < times and not reply.done():
            # A terminated backend can still be listed as waiting for a moment: it is not counted twice.
            pid = await conn.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND wait_event_type = 'Lock' AND query ILIKE '%localization%' AND NOT (pid = ANY($1::int[])) LIMIT 1",
                list(terminated),
            )
            if pid is None:
                await asyncio.sleep(0.02)
                continue
            if await conn.fetchval("SELECT pg_terminate_backend($1)", pid):
                terminated.add(pid)
    return len(terminated)
