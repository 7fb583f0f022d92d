"""Helpers for job-API tests: the real API over HTTP (uvicorn on loopback), API keys, a webhook
receiver, isolated stacks (own Redis prefix or server, own database, own workers)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import uvicorn

from infra.budgets import BudgetLimits
from infra.corpus import ArticleRecord, read_corpus
from infra.db.api_keys import IssuedKey, create_key
from infra.db.pool import create_pool
from infra.settings import Settings
from infra.status import JobStatus
from tests.support import reaper, services

FINAL = {s.value for s in JobStatus if s.is_final}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _awaiting(task: asyncio.Task[Any]) -> str:
    """The task's chain of awaits, outermost first, down to what it waits on."""
    lines = [repr(task)]
    awaited: Any = task.get_coro()
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            lines.append(f"  waiting on {awaited!r}")
            break
        lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return "\n".join(lines)


class ApiServer:
    """`api.main.create_app(settings)` served by uvicorn in a thread, on a loopback port."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ApiServer:
        from api.main import create_app

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(create_app(self.settings), log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("API server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)

    def dump_tasks(self) -> str:
        """Every thread's stack and every task of the server's event loop: what a request that does
        not answer is waiting on (for a drill's failure report; read from the test's thread)."""
        import faulthandler
        import tempfile

        with tempfile.TemporaryFile("w+") as frames:
            faulthandler.dump_traceback(file=frames, all_threads=True)
            frames.seek(0)
            out = ["== threads", frames.read(), "== API tasks"]
        servers = self._server.servers if self._server is not None else []
        if servers:
            loop = servers[0].get_loop()
            for _ in range(5):  # the set may change while it is read from this thread
                try:
                    tasks = list(asyncio.all_tasks(loop))
                    break
                except RuntimeError:
                    continue
            else:
                tasks = []
            out.extend(_awaiting(task) for task in tasks)
        return "\n".join(out)

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)


def issue_key(settings: Settings, name: str = "test", *, admin: bool = False,
              budgets: BudgetLimits | None = None) -> IssuedKey:
    async def go() -> IssuedKey:
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                return await create_key(conn, f"{name}-{secrets.token_hex(3)}", is_admin=admin, budgets=budgets)
        finally:
            await pool.close()

    return asyncio.run(go())


def query(settings: Settings, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Run one SQL statement against the stack's database (assertions on stored state)."""

    async def go() -> list[dict[str, Any]]:
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        try:
            return [dict(r) for r in await pool.fetch(sql, *args)]
        finally:
            await pool.close()

    return asyncio.run(go())


def index_ruby_articles(settings: Settings) -> list[str]:
    """A few English Ruby articles embedded into the vector store (the vector worker does it)."""
    from tests.support.indexing import index_ids_sync

    ids = [r["id"] for r in query(
        settings,
        "SELECT id FROM localizations WHERE language = 'en' AND title ILIKE '%ruby%' ORDER BY created_at DESC LIMIT 12",
    )]
    index_ids_sync(settings, ids, timeout_s=120)
    return ids


def wait_for_job(client: httpx.Client, job_id: str, *, timeout: float = 60.0,
                 until: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Poll GET /v1/jobs/{id} until it is final (or `until` holds)."""
    done = until or (lambda doc: doc["status"] in FINAL)
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        doc: dict[str, Any] = response.json()
        if done(doc):
            return doc
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {doc['status']} after {timeout}s: {doc}")
        time.sleep(0.1)


def submit_and_succeed(client: httpx.Client, **body: Any) -> dict[str, Any]:
    """POST /v1/questions with `body`, wait for the job; it must succeed. Returns its document."""
    response = client.post("/v1/questions", json=body)
    assert response.status_code == 202, response.text
    doc = wait_for_job(client, response.json()["id"])
    assert doc["status"] == "succeeded", doc
    return doc


def wait_until(predicate: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


@dataclass
class ReceivedHook:
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.body)
        return document

    @property
    def job_id(self) -> str:
        """The job of a Standard Webhooks envelope `{type, timestamp, data: <job document>}`."""
        try:
            return str(self.json().get("data", {}).get("id", ""))
        except ValueError:
            return ""

    @property
    def delivery(self) -> str:
        """The `webhook-id` (the delivery id: the same on every attempt of one delivery, receivers dedupe on it)."""
        return next((v for k, v in self.headers.items() if k.lower() == "webhook-id"), "")


def _always(status: int) -> Callable[[int], tuple[int, float]]:
    return lambda n: (status, 0.0)


@dataclass
class WebhookReceiver:
    """An HTTP receiver on loopback. The n-th POST for a job (0-based) gets `respond(n)` ->
    (status, seconds to hang before answering); every POST is recorded when it arrives, before
    any hang."""

    respond: Callable[[int], tuple[int, float]] = field(default_factory=lambda: _always(200))
    response_headers: dict[str, str] = field(default_factory=dict)  # sent with every answer
    received: list[ReceivedHook] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                hook = ReceivedHook(dict(self.headers.items()), body, time.time())
                n = len(receiver.for_job(hook.job_id))
                receiver.received.append(hook)
                receiver.arrived.set()
                status, hang_s = receiver.respond(n)
                if hang_s:
                    time.sleep(hang_s)
                try:
                    self.send_response(status)
                    for name, value in receiver.response_headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the sender gave up (timeout) or died meanwhile
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def for_job(self, job_id: str) -> list[ReceivedHook]:
        return [h for h in list(self.received) if h.job_id == job_id]


@contextmanager
def webhook_receiver(
    status: int = 200, *, respond: Callable[[int], tuple[int, float]] | None = None
) -> Iterator[WebhookReceiver]:
    """A receiver answering `status` to every POST, or `respond(n)` for the n-th POST of a job."""
    receiver = WebhookReceiver(respond=respond or _always(status)).start()
    try:
        yield receiver
    finally:
        receiver.stop()


class RedisServer:
    """A private `redis-server` (no persistence), so a test can kill and restart it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        reaper.track(self.proc.pid)  # it dies with the test run, however the run ends
        import redis

        client = redis.Redis.from_url(self.url, socket_timeout=1)
        wait_until(lambda: _pings(client), timeout=10, what=f"redis-server on {self.port}")
        return self

    def kill(self) -> None:
        """SIGKILL: every queued message and unacked delivery in it is gone."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        self.kill()


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


def stack_settings(base: Settings, **overrides: Any) -> Settings:
    """`base` with overrides (nested `limits__x=` keys update the limits)."""
    limit_overrides = {k.removeprefix("limits__"): v for k, v in overrides.items() if k.startswith("limits__")}
    plain = {k: v for k, v in overrides.items() if not k.startswith("limits__")}
    if limit_overrides:
        plain["limits"] = base.limits.model_copy(update=limit_overrides)
    return base.model_copy(update=plain)


def settings_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment a worker subprocess needs to join the stack described by `settings`."""
    return {
        "TURNOUT_DATABASE_URL": settings.database_url,
        "TURNOUT_REDIS_URL": settings.redis_url,
        "TURNOUT_REDIS_PREFIX": settings.redis_prefix,
        **extra,
    }


def start_worker(settings: Settings, queues: str, *, beat: bool, env: dict[str, str] | None = None,
                 concurrency: int = 4) -> services.WorkerProcess:
    """A worker in the stack described by `settings`, ready when it answers a ping on its own broker."""
    from workers.app import create_celery
    from workers.dispatch import answers_ping

    worker = services.WorkerProcess(
        queues=queues, concurrency=concurrency, env=settings_env(settings, **(env or {})), beat=beat
    ).start(wait_ready=False)
    app = create_celery(settings)
    deadline = time.monotonic() + 60
    while not answers_ping(app, timeout=2):
        if worker.proc is not None and worker.proc.poll() is not None:
            raise RuntimeError(f"worker exited: {worker.log_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"worker not ready: {worker.log_text()[-3000:]}")
    app.close()
    return worker


@contextmanager
def throwaway_database(name_hint: str) -> Iterator[str]:
    """A migrated database of its own (no sweeper of another stack can see its jobs); dropped after."""
    from infra.migrate import upgrade

    name = f"turnout_test_{name_hint}_{secrets.token_hex(3)}"
    services.create_database(name)
    dsn = services.dsn_for(name)
    try:
        upgrade(dsn)
        yield dsn
    finally:
        services.drop_database(name)


def load_articles(settings: Settings, limit: int = 40) -> list[str]:
    """English Ruby news from the shared corpus (read at run time), so searches find something."""
    from infra.db.articles import upsert_records
    from infra.db.pool import create_pool

    records = [r for r in read_corpus(services.SHARED_CORPUS)
               if isinstance(r, ArticleRecord) and r.language == "en" and "ruby" in r.title.lower()][:limit]

    async def load() -> None:
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                await upsert_records(conn, records)
        finally:
            await pool.close()

    asyncio.run(load())
    return [r.id for r in records]


_PREFER_WAIT = re.compile(r"wait\s*=\s*\d+", re.IGNORECASE)


def shorten_prefer_wait(headers: MutableMapping[str, Any] | None) -> None:
    """For fuzzing an API whose jobs never run: a generated `Prefer: wait=N` waits 1 s, not N."""
    if headers and "Prefer" in headers:
        headers["Prefer"] = _PREFER_WAIT.sub("wait=1", str(headers["Prefer"]))
