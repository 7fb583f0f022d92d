"""Wake-ups on job events: one LISTEN connection per process, fanned out to waiting requests.

Every `job_events` row sends NOTIFY `turnout_job_events` "<job id>:<kind>" when it commits
(migration 0002). An event stream or a long-polling `GET` watches its job and wakes when a row
for it lands, instead of polling the table. A watcher still re-reads the table every
`recheck_s` (more often while the connection is down and being re-opened), so a notification
missed during a reconnect delays a reader, never strands it.

The same connection carries the process's other channels (`subscribe`, e.g. API key changes for
infra/db/key_cache.py); a subscriber is told whenever notifications may have been missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import asyncpg
from tenacity import AsyncRetrying, retry_if_exception_type, wait_exponential

from infra.db.job_events import FINAL_KINDS
from infra.db.pool import redact
from infra.settings import ConfigError

log = logging.getLogger("turnout.api")

CHANNEL = "turnout_job_events"
RECHECK_CONNECTED_S = 2.0  # a safety net only: notifications are delivered on commit
RECHECK_DISCONNECTED_S = 0.2  # the poll interval while the listening connection is being re-opened
RESYNC = "*"  # the "kind" a waiter is woken with after a reconnect: re-read, anything may have changed


class JobWatch:
    """What one waiter has been told about its job since it last waited."""

    def __init__(self, *, final_only: bool = False) -> None:
        self._woken = asyncio.Event()
        self._final_only = final_only
        self.kinds: list[str] = []

    def _notify(self, kind: str) -> None:
        if self._final_only and kind not in FINAL_KINDS and kind != RESYNC:
            return  # a progress event, and this waiter only cares about the end
        self.kinds.append(kind)
        self._woken.set()

    async def wait(self, timeout_s: float) -> bool:
        """True when an event for the job arrived (or had arrived) within `timeout_s`."""
        try:
            async with asyncio.timeout(max(0.0, timeout_s)):
                await self._woken.wait()
        except TimeoutError:
            return False
        self._woken.clear()
        return True

    def reset(self) -> None:
        self.kinds.clear()


@dataclass(frozen=True)
class _Subscription:
    channel: str
    on_payload: Callable[[str], None]
    on_gap: Callable[[], None]  # notifications may have been missed (connection lost or re-opened)


class JobEventListener:
    """LISTENs on a dedicated connection (not a pooled one: a pool resets its connections,
    which would UNLISTEN). Use from the event loop that called `start()`."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._conn: asyncpg.Connection | None = None
        self._watches: dict[str, set[JobWatch]] = {}
        self._subscriptions: list[_Subscription] = []
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    @property
    def recheck_s(self) -> float:
        return RECHECK_CONNECTED_S if self.connected else RECHECK_DISCONNECTED_S

    def subscribe(self, channel: str, on_payload: Callable[[str], None], *, on_gap: Callable[[], None]) -> None:
        """Also LISTEN on `channel` (before `start()`): each payload goes to `on_payload`; `on_gap`
        is called when the connection is lost and again when it is re-opened."""
        if channel == CHANNEL or any(sub.channel == channel for sub in self._subscriptions):
            raise ValueError(f"channel {channel!r} is already listened to")
        if self._conn is not None:
            raise RuntimeError("subscribe before start()")
        self._subscriptions.append(_Subscription(channel, on_payload, on_gap))

    async def start(self) -> None:
        try:
            await self._connect()
        except (OSError, asyncpg.PostgresError) as exc:
            raise ConfigError(f"cannot listen for job events on {redact(self._dsn)}: {exc}") from exc

    async def close(self) -> None:
        self._closed = True
        if self._reconnecting is not None:
            self._reconnecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconnecting
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

    @contextlib.contextmanager
    def watch(self, job_id: str, *, final_only: bool = False) -> Iterator[JobWatch]:
        """Watch a job (only its end, with `final_only`); enter before reading its state, so no
        event can fall in between."""
        watch = JobWatch(final_only=final_only)
        self._watches.setdefault(job_id, set()).add(watch)
        try:
            yield watch
        finally:
            watchers = self._watches.get(job_id)
            if watchers is not None:
                watchers.discard(watch)
                if not watchers:
                    del self._watches[job_id]

    async def _connect(self) -> None:
        conn = await asyncpg.connect(self._dsn)
        try:
            await conn.add_listener(CHANNEL, self._on_notification)
            for sub in self._subscriptions:
                await conn.add_listener(sub.channel, self._subscriber(sub))
        except BaseException:
            conn.terminate()
            raise
        conn.add_termination_listener(self._on_terminated)
        self._conn = conn
        for sub in self._subscriptions:
            sub.on_gap()
        # Events may have landed while nobody listened: let every waiter re-read.
        for watchers in list(self._watches.values()):
            for watch in list(watchers):
                watch._notify(RESYNC)

    def _on_notification(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        job_id, _, kind = str(payload).partition(":")
        for watch in list(self._watches.get(job_id, ())):
            watch._notify(kind)

    @staticmethod
    def _subscriber(sub: _Subscription) -> Callable[[object, int, str, object], None]:
        def deliver(_conn: object, _pid: int, _channel: str, payload: object) -> None:
            sub.on_payload(str(payload))

        return deliver

    def _on_terminated(self, _conn: object) -> None:
        self._conn = None
        for sub in self._subscriptions:
            sub.on_gap()
        if self._closed or (self._reconnecting is not None and not self._reconnecting.done()):
            return
        log.warning("job event listener: connection lost; re-opening it (streams poll meanwhile)")
        self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        # Keeps trying for as long as the process lives: without it, streams fall back to polling.
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(Exception),
            wait=wait_exponential(multiplier=0.2, max=5.0),
            before_sleep=lambda state: log.info("job event listener: reconnect attempt %d failed: %s",
                                                state.attempt_number, state.outcome.exception() if state.outcome else ""),
        )
        async for attempt in retrying:
            with attempt:
                await self._connect()
        log.info("job event listener: listening again")
