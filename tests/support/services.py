"""Real services for tests: a throwaway database, a Redis key prefix, Celery worker processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import asyncpg
import psutil
import redis

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_CORPUS = Path(os.environ.get("TURNOUT_TEST_CORPUS", REPO_ROOT.parent / "shared" / "corpus" / "articles.jsonl"))
ADMIN_DSN = os.environ.get("TURNOUT_TEST_ADMIN_DSN", "postgresql://postgres@127.0.0.1:5432/test")
TEST_REDIS_URL = os.environ.get("TURNOUT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ARTIFACTS = REPO_ROOT / "test-artifacts"


def dsn_for(database: str) -> str:
    base, _ = ADMIN_DSN.rsplit("/", 1)
    return f"{base}/{database}"


def require_postgres() -> None:
    async def check() -> None:
        conn = await asyncpg.connect(ADMIN_DSN, timeout=5)
        await conn.close()

    try:
        asyncio.run(check())
    except Exception as exc:  # any failure here means the suite cannot run
        raise RuntimeError(
            f"PostgreSQL is not reachable at {ADMIN_DSN} ({exc}). Start it (`bash .ci/run` does) "
            "or point TURNOUT_TEST_ADMIN_DSN at a server where the tests may create databases."
        ) from exc


def require_redis() -> None:
    try:
        redis.Redis.from_url(TEST_REDIS_URL, socket_timeout=5).ping()
    except Exception as exc:
        raise RuntimeError(
            f"Redis is not reachable at {TEST_REDIS_URL} ({exc}). Start it (`bash .ci/run` does) "
            "or set TURNOUT_TEST_REDIS_URL."
        ) from exc


def create_database(name: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(ADMIN_DSN)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(go())


def drop_database(name: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(ADMIN_DSN)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    asyncio.run(go())


def delete_redis_prefix(prefix: str) -> int:
    client = redis.Redis.from_url(TEST_REDIS_URL)
    deleted = 0
    for key in client.scan_iter(match=f"{prefix}*", count=1000):
        deleted += cast(int, client.delete(key))
    return deleted


@dataclass
class WorkerProcess:
    """A real `celery worker` subprocess running Turnout's tasks."""

    queues: str = "router,search,rag,webhooks,embeddings,maintenance"
    concurrency: int = 4
    pool: str = "threads"
    env: Mapping[str, str] = field(default_factory=dict)
    beat: bool = False  # embed Celery beat (the sweeper's schedule), as the front worker does
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None

    def start(self, wait_ready: bool = True) -> WorkerProcess:
        env = {**os.environ, **self.env}
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = self.log_path or ARTIFACTS / f"worker-{os.getpid()}-{time.monotonic_ns()}.log"
        beat: list[str] = []
        if self.beat:  # the schedule file sits beside the log (test-artifacts/, git-ignored)
            beat = ["-B", "-s", str(self.log_path.with_suffix(".beat-schedule"))]
        with self.log_path.open("wb") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", self.queues,
                 "-c", str(self.concurrency), "-P", self.pool, "--loglevel", "INFO",
                 "--without-mingle", "--without-gossip", "-n", f"test-{time.monotonic_ns()}@%h", *beat],
                cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        from workers.dispatch import answers_ping
        from workers.tasks.maintenance import ping

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.proc.returncode}; log: {self.log_text()[-3000:]}")
            if answers_ping(ping.app, timeout=2):
                return
        raise RuntimeError(f"celery worker not ready in {timeout}s; log: {self.log_text()[-3000:]}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the whole worker process group (SIGKILL = a crash; nothing gets to clean up)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()


# The same split `turnout up` runs (turnout/embedded/stack.py): routers wait on search/RAG tasks,
# so they have threads of their own; the vector store (Qdrant Edge) may be opened by one process
# only, so `rag` and `embeddings` live in their own worker; beat runs in the front worker.
ROUTER_QUEUES = "router"
FRONT_QUEUES = "search,webhooks,maintenance"
VECTOR_QUEUES = "rag,embeddings"


@dataclass
class WorkerGroup:
    router: WorkerProcess
    front: WorkerProcess
    vector: WorkerProcess

    @classmethod
    def start(cls, env: Mapping[str, str] | None = None) -> WorkerGroup:
        env = dict(env or {})
        router = WorkerProcess(queues=ROUTER_QUEUES, env=env, concurrency=8).start(wait_ready=False)
        front = WorkerProcess(queues=FRONT_QUEUES, env=env, beat=True).start(wait_ready=False)
        vector = WorkerProcess(queues=VECTOR_QUEUES, env=env).start(wait_ready=False)
        front.wait_ready()
        return cls(router, front, vector)

    def stop(self) -> None:
        for worker in (self.router, self.front, self.vector):
            worker.stop()


def assert_all_gone(processes: Iterable[psutil.Process], timeout_s: float = 15.0) -> None:
    """Every one of these processes has exited (zombies count as gone) within ``timeout_s``."""
    processes = list(processes)
    deadline = time.monotonic() + timeout_s
    alive: list[str] = []
    while time.monotonic() < deadline:
        alive = []
        for p in processes:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
            except psutil.NoSuchProcess:
                continue
        if not alive:
            return
        time.sleep(0.25)
    raise AssertionError(f"processes left behind: {alive}")
