"""Shared fixtures: real PostgreSQL (a throwaway database), real Redis (a throwaway key
prefix), real Celery worker processes, and the scripted OpenAI-compatible LLM server.

The environment is set here, at import, because settings are read (and cached) at their first
use, which can come during collection, and worker subprocesses inherit the same variables.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from tests.support.rewrite_first import import_plugin_packages

import_plugin_packages()  # first, while this process has one thread (see the module)

from tests.support import reaper, services  # noqa: E402
from tests.support.llm_server import ScriptedLLM  # noqa: E402

_RUN = secrets.token_hex(4)
TEST_DATABASE = f"turnout_test_{_RUN}"
TEST_PREFIX = f"turnout-test-{_RUN}:"
_DATA_DIR = tempfile.mkdtemp(prefix=f"turnout-test-{_RUN}-")
# At exit, also where no session fixture runs: pytest-xdist's controlling process imports this module too.
atexit.register(shutil.rmtree, _DATA_DIR, ignore_errors=True)

# Before any process is started: whatever this run starts dies with it (tests/support/reaper.py).
reaper.start(_RUN)

_LLM = ScriptedLLM().start()

os.environ.update(
    {
        "TURNOUT_DATABASE_URL": services.dsn_for(TEST_DATABASE),
        "TURNOUT_REDIS_URL": services.TEST_REDIS_URL,
        "TURNOUT_REDIS_PREFIX": TEST_PREFIX,
        "TURNOUT_DATA_DIR": _DATA_DIR,
        "TURNOUT_LLM_BASE_URL": _LLM.base_url,
        "TURNOUT_LLM_API_KEY": "test-key",
        "TURNOUT_LLM_MAX_RETRIES": "2",
        "TURNOUT_WEBHOOK_ALLOW_PRIVATE": "true",
    }
)

from infra.settings import Settings, get_settings  # noqa: E402  (after the environment is set)


@pytest.fixture(scope="session", autouse=True)
def test_environment() -> Iterator[None]:
    """Fail (never skip) when PostgreSQL or Redis is down; create and drop the test database."""
    services.require_postgres()
    services.require_redis()
    services.create_database(TEST_DATABASE)
    from infra.migrate import upgrade

    upgrade(os.environ["TURNOUT_DATABASE_URL"])
    try:
        yield
    finally:
        _LLM.stop()
        services.drop_database(TEST_DATABASE)
        services.delete_redis_prefix(TEST_PREFIX)


@pytest.fixture(scope="session")
def settings() -> Settings:
    return get_settings()


@pytest.fixture
def own_counters(settings: Settings) -> Settings:
    """The suite's settings with a Redis prefix of this test's own, for reading counter deltas: the
    session's worker processes add what a previous test's job counted at their next heartbeat, which
    can fall between this test's two readings (three 5xx of an unscripted job did, once)."""
    return settings.model_copy(update={"redis_prefix": f"{settings.redis_prefix}counts-{secrets.token_hex(4)}:"})


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[asyncpg.Pool]:
    from infra.db.pool import create_pool

    pool = await create_pool(settings.database_url, min_size=1, max_size=4)
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture(scope="session")
def llm_server() -> ScriptedLLM:
    return _LLM


@pytest.fixture
def llm(llm_server: ScriptedLLM) -> Iterator[ScriptedLLM]:
    llm_server.reset()
    yield llm_server
    llm_server.reset()


# A test with one of these may make jobs the session's workers run (once any test started them).
_JOB_MAKERS = frozenset({"celery_worker", "api", "client", "idle_api", "idle_client", "llm"})
# A test with the session database's pool may insert job rows itself (a queued job for the infra
# tests, a row for audit rows to reference): the sweeper sends such a job to the session's workers
# once its lease runs out, and its routing would take a later test's scripted replies.
_JOB_ROW_MAKERS = frozenset({"db"})


@pytest.fixture(autouse=True)
def no_jobs_left_running(request: pytest.FixtureRequest) -> Iterator[None]:
    """The session's workers are shared: a job a test left behind (it failed before waiting for
    its jobs, never waits for them, or only inserted its row) would take a later test's scripted
    replies."""
    makers = bool(_JOB_MAKERS.intersection(request.fixturenames))
    if not makers and not _JOB_ROW_MAKERS.intersection(request.fixturenames):
        yield
        return
    started = datetime.now(UTC)
    yield
    _end_leftover_jobs(started, wait=makers)


LEFTOVER_JOBS_TIMEOUT_S = 60.0
QUIET_POLLS = 3  # a queued job the workers take (or a parked one handed a slot) runs within a poll
# Running under a live lease: not the ones a killed runner left, and not the queued jobs of a stack
# without workers (the `idle_api` tests), which never start.
_RUNNING_JOBS = "SELECT count(*) FROM jobs WHERE status = 'running' AND lease_expires_at > now()"
_RUNNING_JOBS_SEEN = ("SELECT question, started_at FROM jobs WHERE status = 'running' AND lease_expires_at > now() "
                      "ORDER BY started_at LIMIT 8")


# The jobs the test made that have not ended (a module's fixtures make theirs before its tests).
_LEFT_BY_TEST = ("SELECT id, api_key_id FROM jobs WHERE status IN ('queued', 'running') AND created_at >= $1 "
                 "AND api_key_id IS NOT NULL")


# The bulk retry runs the test started (`POST /v1/admin/jobs/retry-runs`): a run makes its retries in
# batches, after the test may have looked for its jobs.
_OPEN_RETRY_RUNS = "SELECT count(*) FROM job_retry_runs WHERE status IN ('queued', 'running') AND created_at >= $1"
_RUNNING_RETRY_RUNS = "SELECT count(*) FROM job_retry_runs WHERE status = 'running' AND created_at >= $1"
# One no worker has taken yet never starts (`start_run` takes only queued or running ones).
_CANCEL_QUEUED_RETRY_RUNS = ("UPDATE job_retry_runs SET status = 'cancelled', finished_at = now(), updated_at = now() "
                             "WHERE status = 'queued' AND created_at >= $1")


async def until_retry_runs_end(conn: asyncpg.Connection, since: datetime) -> None:
    """End the test's retry runs before its jobs are ended: a queued one is cancelled, a running one
    is waited for, so every retry it makes exists when the guard looks."""
    await conn.execute(_CANCEL_QUEUED_RETRY_RUNS, since)
    deadline = time.monotonic() + LEFTOVER_JOBS_TIMEOUT_S
    while running := await conn.fetchval(_RUNNING_RETRY_RUNS, since):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{running} retry runs still run {LEFTOVER_JOBS_TIMEOUT_S:.0f} s after a test")
        await asyncio.sleep(0.1)


async def _until_none_runs(conn: asyncpg.Connection) -> None:
    deadline, quiet = time.monotonic() + LEFTOVER_JOBS_TIMEOUT_S, 0
    while quiet < QUIET_POLLS:
        running = await conn.fetchval(_RUNNING_JOBS)
        quiet = quiet + 1 if running == 0 else 0
        if running and time.monotonic() > deadline:
            left = await conn.fetch(_RUNNING_JOBS_SEEN)
            raise RuntimeError(f"{running} jobs still run {LEFTOVER_JOBS_TIMEOUT_S:.0f} s after a test: "
                               + "; ".join(f"{r['question']!r} since {r['started_at']}" for r in left))
        await asyncio.sleep(0.1)


def _end_leftover_jobs(since: datetime, *, wait: bool) -> None:
    """Cancel what the test left (queued and parked ones at once, running ones at their next safe
    point), then, when it left any or could have started jobs (`wait`), wait until no job runs."""
    async def end() -> None:
        from infra.db.job_cancel import request_cancel
        from infra.db.pool import create_pool

        dsn = services.dsn_for(TEST_DATABASE)
        if not wait:  # most tests with a pool make no job: one plain query says so
            conn = await asyncpg.connect(dsn)
            try:
                if not await conn.fetch(_LEFT_BY_TEST, since) and not await conn.fetchval(_OPEN_RETRY_RUNS, since):
                    return
            finally:
                await conn.close()
        pool = await create_pool(dsn, min_size=1, max_size=1)  # its JSON codecs
        try:
            async with pool.acquire() as conn:
                await until_retry_runs_end(conn, since)
                for row in await conn.fetch(_LEFT_BY_TEST, since):
                    await request_cancel(conn, row["id"], api_key_id=row["api_key_id"])
                await _until_none_runs(conn)
        finally:
            await pool.close()

    # In a thread: an async test's loop may still be running in this one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, end()).result()


@pytest.fixture(scope="session")
def celery_worker() -> Iterator[services.WorkerGroup]:
    """Real worker processes for every queue, shared by the session (front + vector, as `turnout up`)."""
    group = services.WorkerGroup.start()
    try:
        yield group
    finally:
        group.stop()


@pytest.fixture(scope="session")
def shared_corpus(test_environment: None, settings: Settings) -> Path:
    """The real ru/en/de corpus loaded once into the test database."""
    from infra.corpus import ArticleRecord, read_corpus
    from infra.db.articles import upsert_records
    from infra.db.pool import create_pool

    path = services.SHARED_CORPUS
    if not path.exists():
        raise RuntimeError(f"shared corpus not found at {path}; set TURNOUT_TEST_CORPUS")
    records = [r for r in read_corpus(path) if isinstance(r, ArticleRecord)]

    async def load() -> None:
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        async with pool.acquire() as conn:
            await upsert_records(conn, records)
        await pool.close()

    asyncio.run(load())
    return path


def pytest_configure(config: pytest.Config) -> None:
    # One clear stop, not a hundred errors: many tests and drills read the real corpus.
    if not services.SHARED_CORPUS.is_file():
        raise pytest.UsageError(
            f"the tests need the real corpus (articles.jsonl), not found at {services.SHARED_CORPUS}; "
            "set TURNOUT_TEST_CORPUS to its path (default: ../shared/corpus/articles.jsonl beside the checkout)"
        )
    services.ARTIFACTS.mkdir(exist_ok=True)
