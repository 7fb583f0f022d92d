"""PostgreSQL stops briefly under a running stack (a private server this test starts, so the
shared one is never touched). While it is down the API answers 503 with a clear error (health,
submissions, reads) and accepts nothing; when it returns the API and the worker recover, and
every job accepted before or after the outage ends final exactly once."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.settings import Settings
from tests.api.support import (
    ApiServer,
    RedisServer,
    WebhookReceiver,
    free_port,
    load_articles,
    query,
    stack_settings,
    start_worker,
    wait_until,
)
from tests.proof.conftest import (
    DRILL_ENV,
    SEARCH_RUBY,
    TaggedLLM,
    assert_final_once,
    submit,
    wait_final,
)
from tests.support import reaper
from tests.support.llm_server import Delay

pytestmark = pytest.mark.slow

OUTAGE_S = 3.0


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (the machine's initdb/pg_ctl) on a free loopback port,
    trust auth, fsync off. As root the server runs as the `postgres` system user."""

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found:
            raise RuntimeError("no pg_ctl under /usr/lib/postgresql/*/bin: install the PostgreSQL server package")
        self.bin = Path(found[-1]).parent
        self.root = Path(tempfile.mkdtemp(prefix="turnout-pgdrill-"))
        self.data = self.root / "data"
        self.port = free_port()

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stdout}{done.stderr}")

    def init(self) -> PrivatePostgres:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")
        # Daemonized by pg_ctl: it dies with the test run, however the run ends (tests/support/reaper.py).
        reaper.track(int((self.data / "postmaster.pid").read_text().split()[0]))

    def stop(self) -> None:
        """A fast shutdown: open connections are cut, running statements rolled back."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def destroy(self) -> None:
        try:
            self.stop()
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres().init()
    server.start()
    try:
        yield server
    finally:
        server.destroy()


def _create_database(server: PrivatePostgres) -> str:
    import asyncio

    import asyncpg

    from infra.migrate import upgrade

    async def go() -> None:
        conn = await asyncpg.connect(server.dsn("postgres"))
        try:
            await conn.execute('CREATE DATABASE "turnout"')
        finally:
            await conn.close()

    asyncio.run(go())
    upgrade(server.dsn("turnout"))
    return server.dsn("turnout")


def test_postgres_outage(postgres: PrivatePostgres, settings: Settings, drill_redis: RedisServer,
                         tagged: TaggedLLM, hooks: Any) -> None:
    own = stack_settings(settings, database_url=_create_database(postgres), redis_url=drill_redis.url,
                         redis_prefix=settings.redis_prefix + "pgdrill:", job_lease_s=3.0, job_sweep_interval_s=1.0)
    load_articles(own)
    # The jobs accepted before the outage are inside their LLM call when PostgreSQL stops.
    tagged.on("before", lambda n, body: Delay(1.5, SEARCH_RUBY))
    tagged.on("after", lambda n, body: SEARCH_RUBY)
    receiver: WebhookReceiver = hooks()
    worker = start_worker(own, "router,search,webhooks,maintenance", beat=True, env=DRILL_ENV)
    api = ApiServer(own).start()
    try:
        with api.client(_issue_key(own)) as c:
            before = [submit(c, f"find ruby news [drill:before] {i}", receiver.url) for i in range(2)]
            wait_until(lambda: len(tagged.requests_for("before")) >= 2, timeout=30, what="jobs mid-LLM-call")
            postgres.stop()
            stopped_at = time.monotonic()
            try:
                health = c.get("/v1/ops/health")
                assert health.status_code == 503, health.text
                assert health.json()["checks"]["postgres"]["status"] == "down"
                refused = c.post("/v1/questions", json={"question": "find ruby news [drill:lost]"})
                assert refused.status_code == 503, refused.text
                error = refused.json()["error"]
                assert error["code"] == "unavailable" and "database" in error["message"].lower(), error
                read = c.get(f"/v1/jobs/{before[0]}")
                assert read.status_code == 503 and read.json()["error"]["code"] == "unavailable", read.text
                # Down until the interrupted jobs' LLM replies (1.5 s) have come back to a dead database.
                time.sleep(max(0.0, stopped_at + OUTAGE_S - time.monotonic()))
            finally:
                postgres.start()
            wait_until(lambda: c.get("/v1/ops/health").status_code == 200, timeout=30, what="the API to recover")
            after = [submit(c, f"find ruby news [drill:after] {i}", receiver.url) for i in range(2)]
            docs = wait_final(c, before + after, timeout=60)
    finally:
        api.stop()
        worker.stop()
    assert_final_once(own, docs, webhook=True)
    for job_id in before + after:
        assert len(receiver.for_job(job_id)) == 1
    # Nothing accepted was lost and nothing refused was stored.
    assert sorted(r["id"] for r in query(own, "SELECT id FROM jobs")) == sorted(before + after)
    assert all(docs[j]["status"] == "succeeded" for j in after), [docs[j] for j in after]
    # The interrupted jobs could not write anything while it was down. Either their runner's writes
    # went through once it was back (attempt 1) or the sweeper ran them again (attempt 2+): both
    # end succeeded, final exactly once, with one webhook (asserted above) - never failed or lost.
    for job_id in before:
        assert docs[job_id]["status"] == "succeeded" and docs[job_id]["attempts"] >= 1, docs[job_id]
        kinds = [r["kind"] for r in query(own, "SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id", job_id)]
        assert kinds.count("running") == docs[job_id]["attempts"], kinds
        assert ("requeued" in kinds) == (docs[job_id]["attempts"] >= 2), kinds


def _issue_key(settings: Settings) -> str:
    from tests.api.support import issue_key

    return issue_key(settings, "pgdrill").token
