from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from infra.db.api_keys import create_key
from infra.db.jobs import JobRow, create_job
from infra.db.pool import create_pool
from tests.api.support import throwaway_database


@pytest.fixture
def fresh_dsn() -> Iterator[str]:
    """A migrated database of this test's own, dropped afterwards."""
    with throwaway_database("infra") as dsn:
        yield dsn


@pytest.fixture
async def pool(fresh_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    """A small pool on `fresh_dsn`."""
    pool = await create_pool(fresh_dsn, min_size=1, max_size=3)
    yield pool
    await pool.close()


async def queued_job(pool: asyncpg.Pool) -> JobRow:
    """A queued job (with its `queued` event) of a new API key."""
    async with pool.acquire() as conn:
        key = await create_key(conn, "infra-test")
        job, _ = await create_job(conn, api_key_id=key.key.id, question="q", answer_language=None, page_size=None,
                                  webhook_url=None, idempotency_key=None, request_hash="h", lease_s=60)
    return job


async def terminate_listeners(pool: asyncpg.Pool) -> int:
    """Kill the database's LISTENing connections (as a database restart or a network cut would);
    how many there were."""
    async with pool.acquire() as conn:
        killed: int = await conn.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query LIKE 'LISTEN %'"
        )
    return killed
