"""Fixtures shared with tests/infra (a migrated database of the test's own, a small pool on it)
and tests/router (a real job row per question); the vectors of the queue executor's tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from infra.db.pool import create_pool
from infra.settings import Settings
from tests.api.support import throwaway_database
from tests.infra.conftest import fresh_dsn, pool  # noqa: F401 (fixtures)
from tests.router.conftest import TODAY, new_job  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def module_dsn(request: pytest.FixtureRequest, test_environment: None) -> Iterator[str]:
    """A migrated database of this test module's own (no other stack's sweeper sees its jobs)."""
    with throwaway_database(request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")) as dsn:
        yield dsn


@pytest.fixture
async def module_pool(module_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    """A small pool on `module_dsn`, per test."""
    p = await create_pool(module_dsn, min_size=1, max_size=6)
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture(scope="session")
def indexed_ids(shared_corpus: object, celery_worker: object, settings: Settings) -> list[str]:
    """Vectors for a handful of real English articles about YJIT (page 1 of that search, size 5),
    written by the real re-embedding run on the real vector worker."""
    from infra.db.pool import create_pool
    from retrieval.search import normalize_search, search_articles
    from tests.support.indexing import index_ids_sync

    async def page_ids() -> list[str]:
        own_pool = await create_pool(settings.database_url, min_size=1, max_size=2)
        try:
            query = normalize_search({"text": "YJIT", "language": "en", "pageSize": 5},
                                     limits=settings.limits, today=TODAY)
            return [item.id for item in (await search_articles(own_pool, query)).items]
        finally:
            await own_pool.close()

    ids = asyncio.run(page_ids())
    assert len(ids) == 5, "the shared corpus should have YJIT articles"
    index_ids_sync(settings, ids, timeout_s=240)
    return ids
