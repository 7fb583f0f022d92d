"""Supervision for `turnout up`: a child that dies is started again; the rest keeps serving.

Each supervised service (the API, each worker, embedded Redis, embedded PostgreSQL) is checked
on every tick. A dead one is logged and restarted after a bounded exponential back-off (tenacity's
`wait_exponential`, counted in crashes within the window), without touching the others. A service
that crashed more than ``MAX_CRASHES`` times within ``CRASH_WINDOW_S`` is a crash loop: the
supervisor raises `CrashLoop` naming the service and its last exit, and `turnout up` stops
everything in order. Every restart is recorded in Redis (see `infra.restarts`), where
`turnout status`, /v1/ops/queues, the dashboard and /metrics read it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, TextIO

import psutil
from tenacity import RetryCallState
from tenacity.wait import wait_base, wait_exponential

from infra.settings import Settings
from turnout.embedded import EmbeddedError
from turnout.embedded.postgres import EmbeddedPostgres
from turnout.embedded.processes import Child
from turnout.embedded.redis_server import EmbeddedRedis

if TYPE_CHECKING:
    from turnout.embedded.stack import Stack

CRASH_WINDOW_S = 60.0
MAX_CRASHES = 5  # restarts allowed within the window; one more crash ends `turnout up`
RESTART_WAIT: wait_base = wait_exponential(multiplier=0.5, min=0.5, max=8.0)  # 0.5, 1, 2, 4, 8 s


class CrashLoop(EmbeddedError):
    """A service kept dying: `turnout up` says which and why, then stops."""


@dataclass(frozen=True)
class Restart:
    child: str
    reason: str  # why it had stopped, e.g. "killed by SIGKILL"
    at: float  # time.time() of the restart
    down_s: float  # from noticing the death to the restart


@dataclass
class Supervised:
    """One service: how to tell it stopped (None = running, else why) and how to start it again."""

    name: str
    stopped: Callable[[], str | None]
    restart: Callable[[], None]
    log_hint: Callable[[], str] = lambda: ""
    crashes: deque[float] = field(default_factory=deque)
    restarts: int = 0
    due_at: float | None = None  # a restart is pending (back-off) until this monotonic instant
    down_since: float = 0.0
    reason: str = ""


def backoff_s(crashes: int, wait: wait_base = RESTART_WAIT) -> float:
    """The n-th crash in the window waits `wait` for attempt n (tenacity's arithmetic)."""
    state = RetryCallState(None, None, (), {})  # type: ignore[arg-type]
    state.attempt_number = max(1, crashes)
    return float(wait(state))


class Supervisor:
    def __init__(
        self,
        services: list[Supervised],
        *,
        on_restart: Callable[[Restart], None] = lambda r: None,
        reap: Callable[[], None] = lambda: None,
        err: TextIO = sys.stderr,
        max_crashes: int = MAX_CRASHES,
        window_s: float = CRASH_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.services = services
        self.on_restart = on_restart
        self.reap = reap
        self.err = err
        self.max_crashes = max_crashes
        self.window_s = window_s
        self.clock = clock

    def _say(self, text: str) -> None:
        print(f"· supervisor: {text}", file=self.err, flush=True)

    def tick(self) -> None:
        """One pass over every service; raises `CrashLoop` when one keeps dying."""
        self.reap()
        for s in self.services:
            now = self.clock()
            if s.due_at is None:
                why = s.stopped()
                if why is not None:
                    self._crashed(s, why, now)
            elif now >= s.due_at:
                self._restart(s)

    def _crashed(self, s: Supervised, why: str, now: float) -> None:
        s.crashes.append(now)
        while s.crashes and now - s.crashes[0] > self.window_s:
            s.crashes.popleft()
        if len(s.crashes) > self.max_crashes:
            hint = s.log_hint()
            raise CrashLoop(
                f"{s.name} crashed {len(s.crashes)} times within {self.window_s:.0f}s (last: {why}); "
                f"giving up{':' + chr(10) + hint if hint else ''}"
            )
        if s.due_at is None:
            s.down_since = now
        s.reason = why
        delay = backoff_s(len(s.crashes))
        s.due_at = now + delay
        self._say(f"{s.name} stopped ({why}); restarting in {delay:.1f}s "
                  f"(crash {len(s.crashes)} of {self.max_crashes} allowed within {self.window_s:.0f}s)")

    def _restart(self, s: Supervised) -> None:
        try:
            s.restart()
        except EmbeddedError as exc:  # it would not even start: one more crash (still down since then)
            down_since, s.due_at = s.down_since, None
            self._crashed(s, f"restart failed: {str(exc).splitlines()[0]}", self.clock())
            s.down_since = down_since
            return
        now = self.clock()
        s.due_at = None
        s.restarts += 1
        event = Restart(s.name, s.reason, time.time(), round(now - s.down_since, 3))
        self._say(f"{s.name} restarted (restart #{s.restarts}; it was down {event.down_s:.1f}s)")
        self.on_restart(event)


# ---- the services of the embedded stack ---------------------------------------------------


def exit_reason(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def child_service(child: Child) -> Supervised:
    """An API or worker process: restarted with the same command line and log file."""

    def stopped() -> str | None:
        code = child.exit_code()
        return None if code is None else exit_reason(code)

    def restart() -> None:
        child.kill_group()  # what the dead leader left (e.g. the beat process of `-B`) goes too
        child.wait(5)
        child.start()

    return Supervised(child.name, stopped, restart,
                      log_hint=lambda: f"last lines of {child.log_path}:\n{child.log_tail()}")


def redis_service(redis: EmbeddedRedis) -> Supervised:
    """Embedded Redis: the same port and data directory (the append-only file keeps the queues)."""
    assert redis.child is not None
    child = redis.child

    def stopped() -> str | None:
        code = child.exit_code()
        return None if code is None else exit_reason(code)

    def restart() -> None:
        child.kill_group()
        child.wait(5)
        redis.restart()

    return Supervised("redis", stopped, restart,
                      log_hint=lambda: f"last lines of {child.log_path}:\n{child.log_tail()}")


def postgres_service(postgres: EmbeddedPostgres) -> Supervised:
    """Embedded PostgreSQL: started again on the same data directory and socket (crash recovery
    replays its WAL). The postmaster is not our child but adopted (we are a subreaper): reap it."""

    def stopped() -> str | None:
        pid = postgres.pid
        if pid is None:
            return None
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # only this pid: the children's exit codes stay for Popen
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return None
        except psutil.NoSuchProcess:
            pass
        return f"the postmaster (pid {pid}) is gone"

    return Supervised("postgres", stopped, postgres.restart,
                      log_hint=lambda: f"see {postgres.log_path}")


class RestartRecorder:
    """Writes each restart to Redis for `turnout status` and the dashboard; a restart that could
    not be written (Redis is the one restarting, or still down) is written on a later flush."""

    def __init__(self, redis_url: str, settings: Settings) -> None:
        import redis

        self.settings = settings
        self.client = redis.Redis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=2)
        self.pending: list[Restart] = []

    def record(self, event: Restart) -> None:
        self.pending.append(event)
        self.flush()

    def flush(self) -> None:
        from infra.counters import record_restart_sync
        from infra.transient import REDIS_FAILED

        while self.pending:
            event = self.pending[0]
            try:
                record_restart_sync(self.client, self.settings, asdict(event))
            except REDIS_FAILED:
                return
            self.pending.pop(0)

    def close(self) -> None:
        self.client.close()


def reap_orphans(own: Callable[[], set[int]]) -> None:
    """Collect exited processes we adopted as a subreaper (the backends of a killed postmaster,
    the beat process of a killed worker), but never one of our own children: Popen must see
    those exit codes itself, so no `waitpid(-1)`."""
    mine = own()
    with contextlib.suppress(psutil.Error):
        for p in psutil.Process().children():
            if p.pid in mine:
                continue
            with contextlib.suppress(psutil.Error, ChildProcessError):
                if p.status() == psutil.STATUS_ZOMBIE:
                    os.waitpid(p.pid, os.WNOHANG)


def stack_supervisor(stack: Stack) -> tuple[Supervisor, RestartRecorder]:
    """Every service `turnout up` started itself (external services are someone else's)."""
    assert stack.settings is not None
    services: list[Supervised] = []
    if stack.postgres is not None:
        services.append(postgres_service(stack.postgres))
    if stack.redis is not None:
        services.append(redis_service(stack.redis))
    services += [child_service(c) for c in (stack.api, stack.router, stack.front, stack.vector) if c is not None]
    recorder = RestartRecorder(stack.services.redis_url, stack.settings)
    children = [stack.api, stack.router, stack.front, stack.vector, stack.redis.child if stack.redis else None]

    def own() -> set[int]:
        return {c.pid for c in children if c is not None and c.pid is not None}

    return Supervisor(services, on_restart=recorder.record, reap=lambda: reap_orphans(own), err=stack.err), recorder
