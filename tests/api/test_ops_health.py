"""GET /v1/ops/health: every dependency with up/down and latency; 503 when a required one is down."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from api.health import check_health
from infra.db.pool import create_pool
from infra.redis import create_async_redis
from infra.settings import Settings
from tests.api.support import ApiServer, free_port, stack_settings, wait_until
from tests.support.services import REPO_ROOT, WorkerGroup


@contextmanager
def api_with(settings: Settings, **overrides: Any) -> Iterator[ApiServer]:
    """A second API instance of the session's stack with some settings changed."""
    server = ApiServer(stack_settings(settings, **overrides)).start()
    try:
        yield server
    finally:
        server.stop()


def _health(server: ApiServer) -> tuple[int, dict[str, Any]]:
    with server.client() as anonymous:  # no key: health is the one open endpoint
        response = anonymous.get("/v1/ops/health")
    return response.status_code, response.json()


def test_every_dependency_up(api: ApiServer, celery_worker: WorkerGroup) -> None:
    # The vector worker may still be starting; its heartbeat stands in for the embedded store.
    code, doc = wait_until(lambda: (h := _health(api))[1]["status"] == "ok" and h, timeout=60,
                           what="the vector worker's heartbeat")
    assert code == 200
    checks = doc["checks"]
    assert list(checks) == ["postgres", "redis", "vectorStore", "llm", "embeddings"]
    for name, check in checks.items():
        assert check["status"] == "up", (name, check)
        assert check["latencyMs"] is not None and check["latencyMs"] >= 0
    assert checks["postgres"]["required"] and checks["redis"]["required"]
    assert not checks["llm"]["required"] and not checks["vectorStore"]["required"]
    assert "Qdrant Edge" in checks["vectorStore"]["detail"]
    assert "local model" in checks["embeddings"]["detail"]


def test_redis_down_is_503(settings: Settings) -> None:
    with api_with(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0") as server:
        code, doc = _health(server)
    assert code == 503
    assert doc["status"] == "down"
    assert doc["checks"]["redis"]["status"] == "down"
    assert "Connection" in doc["checks"]["redis"]["detail"]
    assert doc["checks"]["postgres"]["status"] == "up"
    # The vector worker's heartbeat lives in Redis: with Redis down it cannot be known.
    assert doc["checks"]["vectorStore"]["status"] == "down"
    assert doc["checks"]["vectorStore"]["detail"].startswith("unknown")


def test_llm_endpoint_down_degrades_without_503(settings: Settings, celery_worker: WorkerGroup) -> None:
    with api_with(settings, llm_base_url=f"http://127.0.0.1:{free_port()}/v1") as server:
        code, doc = _health(server)
    assert code == 200
    assert doc["status"] == "degraded"
    assert doc["checks"]["llm"]["status"] == "down"
    assert doc["checks"]["llm"]["latencyMs"] is None


def test_llm_not_configured_is_not_down(settings: Settings, celery_worker: WorkerGroup) -> None:
    with api_with(settings, llm_base_url=None) as server:
        code, doc = wait_until(lambda: (h := _health(server))[1]["checks"]["vectorStore"]["status"] == "up" and h,
                               timeout=60, what="the vector worker's heartbeat")
    assert code == 200 and doc["status"] == "ok"
    assert doc["checks"]["llm"]["status"] == "not_configured"
    assert "degraded mode" in doc["checks"]["llm"]["detail"]


def test_llm_endpoint_answering_an_error_is_down(settings: Settings) -> None:
    """Reachable but unusable (the real scripted server, a base path it does not serve): down, with why."""
    assert settings.llm_base_url
    with api_with(settings, llm_base_url=settings.llm_base_url.rstrip("/") + "/nowhere") as server:
        _, doc = _health(server)
    assert doc["checks"]["llm"]["status"] == "down"
    assert doc["checks"]["llm"]["detail"] == "GET /models answered HTTP 404"


def test_qdrant_server_unreachable_is_down(settings: Settings) -> None:
    with api_with(settings, qdrant_url=f"http://127.0.0.1:{free_port()}") as server:
        code, doc = _health(server)
    assert code == 200  # the vector store is not required: search and degraded answers still work
    assert doc["checks"]["vectorStore"]["status"] == "down"
    assert doc["status"] == "degraded"


async def test_postgres_down_is_reported(settings: Settings) -> None:
    pool = await create_pool(settings.database_url, min_size=1, max_size=1)
    await pool.close()  # a pool that can no longer reach the database
    redis = create_async_redis(settings)
    try:
        report = await check_health(settings, pool, redis)
    finally:
        await redis.aclose()
    assert report.status == "down"
    assert report.checks["postgres"].status == "down" and report.checks["postgres"].detail
    assert report.checks["redis"].status == "up"


def test_status_command_with_redis_down_says_so(settings: Settings) -> None:
    env = {**os.environ, "TURNOUT_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "COLUMNS": "160"}
    done = subprocess.run([sys.executable, "-m", "turnout", "status"], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "health: down" in done.stdout
    assert "cannot read the queue figures" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
