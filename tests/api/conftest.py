"""Fixtures for the job API: the real app over HTTP on loopback, fresh API keys per test."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, query, stack_settings, start_worker, throwaway_database
from tests.api.webhook_stack import RETRY_ENV, HookStack


@pytest.fixture(scope="session")
def api(test_environment: None, settings: Settings) -> Iterator[ApiServer]:
    """The API in the session's stack: its jobs run on the session's `celery_worker`."""
    server = ApiServer(settings).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def idle_api(test_environment: None, settings: Settings) -> Iterator[ApiServer]:
    """The API sending to a queue prefix no worker consumes: its jobs stay queued (cancel tests,
    validation, idempotency, rate limits) without running on the scripted LLM. A lease of a day
    keeps any sweeper away; leftovers are cancelled at the end."""
    idle = stack_settings(settings, redis_prefix=settings.redis_prefix + "idle:", job_lease_s=86_400.0)
    server = ApiServer(idle).start()
    yield server
    server.stop()
    _cancel_idle_jobs(settings)


def _cancel_idle_jobs(settings: Settings) -> None:
    """The idle API's queued jobs (its day-long lease marks them), cancelled: the lost-message sweep
    would otherwise re-send them to the real workers, whose LLM calls reach a later test's script."""
    query(settings, "UPDATE jobs SET status = 'cancelled' WHERE status = 'queued' AND lease_expires_at > now() + interval '1 hour'")


@pytest.fixture
def key(settings: Settings) -> IssuedKey:
    return issue_key(settings)


@pytest.fixture
def client(api: ApiServer, key: IssuedKey) -> Iterator[httpx.Client]:
    with api.client(key.token) as c:
        yield c


@pytest.fixture
def idle_client(idle_api: ApiServer, key: IssuedKey) -> Iterator[httpx.Client]:
    with idle_api.client(key.token) as c:
        yield c


@pytest.fixture(autouse=True)
def _idle_jobs_end_with_their_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test of the idle API, not only at the end of the session."""
    yield
    if "idle_api" in request.fixturenames:
        _cancel_idle_jobs(request.getfixturevalue("settings"))


@pytest.fixture(scope="package")  # one webhooks stack for tests/api/test_webhook*.py
def hooks(settings: Settings) -> Iterator[HookStack]:
    with throwaway_database("hooks") as dsn:
        stack = stack_settings(settings, database_url=dsn, redis_prefix=settings.redis_prefix + "hooks:")
        worker = start_worker(stack, "webhooks,maintenance", beat=False, env=RETRY_ENV)
        api = ApiServer(stack).start()
        try:
            yield HookStack(stack, api, worker)
        finally:
            api.stop()
            worker.stop()


@pytest.fixture
def hook_key(hooks: HookStack) -> IssuedKey:
    return issue_key(hooks.settings, "hooks")
