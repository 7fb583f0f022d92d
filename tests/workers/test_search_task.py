"""The `turnout.search.search` task through a real worker process and the real Redis broker,
including a search whose PostgreSQL connection is cut mid-statement."""

from __future__ import annotations

import asyncio
import time
from datetime import date

import asyncpg
import pytest

from infra.db.pool import DatabaseUnavailable
from infra.results import ArticlesPage
from infra.settings import Limits
from retrieval.search import SearchArgumentError, normalize_search, search_articles
from tests.support.cut_connections import LOCK_LOCALIZATIONS, terminate_blocked_reads
from tests.support.services import WorkerGroup
from workers._db_retry import DB_ATTEMPTS
from workers.app import celery_app
from workers.executor import QueueExecutor
from workers.tasks.search import search as search_task

TODAY = date(2026, 11, 29)

pytestmark = pytest.mark.usefixtures("shared_corpus")


def test_task_is_declared_on_the_search_queue() -> None:
    task = celery_app.tasks["turnout.search.search"]
    assert task.queue == "search" and task.ignore_result is False
    assert task.acks_late and task.reject_on_worker_lost


@pytest.mark.parametrize("raw", [
    {"text": "Sicherheitslücken", "language": "de", "pageSize": 5},
    {"text": "релизы", "dateFrom": "2015-01-01", "dateTo": "2030-01-01", "sort": "oldest", "page": 2},
    {"language": "en", "pageSize": 51},
])
async def test_worker_result_equals_the_in_process_service(
    db: asyncpg.Pool, celery_worker: WorkerGroup, raw: dict[str, object]
) -> None:
    query = normalize_search(raw, limits=Limits(), today=TODAY)
    expected = await search_articles(db, query)
    assert expected.items  # a real page, not an empty comparison
    # .get() blocks; it runs in a thread so the test's event loop stays free.
    reply = await asyncio.to_thread(lambda: search_task.apply_async(args=[query.wire()]).get(timeout=60))
    assert reply == expected.wire()
    assert ArticlesPage.model_validate(reply) == expected


async def test_worker_rejects_a_page_size_beyond_the_limit(celery_worker: WorkerGroup) -> None:
    forged = normalize_search({}, limits=Limits(), today=TODAY).wire() | {"pageSize": 5000}
    with pytest.raises(SearchArgumentError) as caught:
        await asyncio.to_thread(lambda: search_task.apply_async(args=[forged]).get(timeout=60))
    assert caught.value.field == "pageSize" and "5000" in caught.value.message


async def test_worker_rejects_a_malformed_query(celery_worker: WorkerGroup) -> None:
    with pytest.raises(SearchArgumentError) as caught:
        await asyncio.to_thread(lambda: search_task.apply_async(args=[{"dateTo": "soon"}]).get(timeout=60))
    assert caught.value.field == "dateTo"


async def test_a_search_whose_connection_is_cut_runs_again_on_a_new_one(
    db: asyncpg.Pool, celery_worker: WorkerGroup
) -> None:
    query = normalize_search({"text": "релизы", "pageSize": 5}, limits=Limits(), today=TODAY)
    expected = await search_articles(db, query)
    async with db.acquire() as lock_holder, lock_holder.transaction():
        # The search blocks behind this lock; its backend is then terminated mid-statement.
        await lock_holder.execute(LOCK_LOCALIZATIONS)
        reply = asyncio.ensure_future(
            asyncio.to_thread(lambda: search_task.apply_async(args=[query.wire()]).get(timeout=60))
        )
        assert await asyncio.wait_for(terminate_blocked_reads(db, reply, times=1), 30) == 1
    assert await asyncio.wait_for(reply, 60) == expected.wire()  # the retry, after the lock is gone


async def test_a_search_that_cannot_reach_the_database_is_a_transient_failure_for_the_job(
    db: asyncpg.Pool, celery_worker: WorkerGroup
) -> None:
    query = normalize_search({"text": "релизы"}, limits=Limits(), today=TODAY)
    async with db.acquire() as lock_holder, lock_holder.transaction():
        await lock_holder.execute(LOCK_LOCALIZATIONS)
        # Through the job runner's executor: every attempt's connection is cut.
        reply = asyncio.ensure_future(QueueExecutor().search(query, deadline=time.monotonic() + 60))
        terminated = await asyncio.wait_for(terminate_blocked_reads(db, reply, times=DB_ATTEMPTS), 30)
        with pytest.raises(DatabaseUnavailable) as caught:  # a ConnectionError: the runner re-queues the job
            await asyncio.wait_for(reply, 60)
    assert terminated == DB_ATTEMPTS
    message = str(caught.value)
    assert f"over {DB_ATTEMPTS} attempts" in message and "terminating connection" in message  # the cause
