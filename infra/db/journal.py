"""A job's narration (audit rows, progress events) written in order, off the job's critical path.

A job runner records a row and goes on at once (to the LLM, to a queued tool) while the row is
written in the background; the rows are written in the order they were added, on one pooled
connection per burst. `flush()` waits for every row before the job's final state is written, so
the final event is still the last one and an audit trail is complete when the job ends.
Cache writes run `alongside()` the rows; `flush()` waits for them too, so everything the job
writes has landed when its final status is visible (a reader may ask for its cached page at once).

Durability is what the rows had before (each is committed without waiting for the WAL flush, see
infra/db/audit.py): a crash can lose the last rows of a job that was still running.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

log = logging.getLogger("turnout.jobs")

Write = Callable[[asyncpg.Connection], Awaitable[object]]


@dataclass(frozen=True)
class _Entry:
    write: Write
    label: str
    critical: bool  # its failure fails flush(); otherwise it is only logged


class Journal:
    """Ordered background writes for one job (one event loop)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._pending: deque[_Entry] = deque()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._alongside: dict[asyncio.Task[object], str] = {}

    def add(self, write: Write, *, label: str, critical: bool = True) -> None:
        """Queue a write; it runs after every write added before it."""
        self._pending.append(_Entry(write, label, critical))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    def alongside(self, work: Awaitable[object], *, label: str) -> None:
        """Run `work` concurrently (a cache write: an optimisation); `flush()` waits for it and
        logs a failure instead of raising it."""
        self._alongside[asyncio.ensure_future(work)] = label

    async def flush(self) -> None:
        """Wait until every queued write and all work started alongside have run; raise the first
        failure of a critical write."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        tasks, self._alongside = self._alongside, {}
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        for label, outcome in zip(tasks.values(), outcomes, strict=True):
            if isinstance(outcome, BaseException):
                _log_failure(label, outcome)
        error, self._error = self._error, None
        if error is not None:
            raise error

    async def _drain(self) -> None:
        # Rows added while the connection is being released are picked up by the outer loop: there
        # is no await between its last check and the end of this task.
        while self._pending:
            try:
                async with self._pool.acquire() as conn:
                    while self._pending:
                        entry = self._pending.popleft()
                        try:
                            await entry.write(conn)
                        except Exception as exc:  # recorded for flush() or logged
                            self._failed(entry, exc)
            except Exception as exc:  # no connection: every pending row fails alike
                while self._pending:
                    self._failed(self._pending.popleft(), exc)

    def _failed(self, entry: _Entry, exc: BaseException) -> None:
        if entry.critical and self._error is None:
            self._error = exc
        else:
            _log_failure(entry.label, exc)


def _log_failure(label: str, exc: BaseException) -> None:
    log.warning("could not write %s: %s: %s", label, type(exc).__name__, exc)
