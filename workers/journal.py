"""A job's narration (audit rows, progress events) written in order, off the job's critical path.

A job runner records a row and goes on at once (to the LLM, to a queued tool) while the row is
written in the background; the rows are written in the order they were added, on one pooled
connection per burst, and the rows added together (a step's audit row and its events) in one
statement. Before the job's final state, `take_rest()` waits for the rows being written and hands
back those not started (the router `hold()`s them once its result is ready), for the final
statement to write before the final event (`Narration`; `flush()` writes them itself): the final
event is still the last one and an audit trail is complete when the job ends.
Cache writes run `alongside()` the rows and are awaited the same way, so everything the job
writes has landed when its final status is visible (a reader may ask for its cached page at once).
A journal may be held `after` a future (the job's claim): rows wait for it to resolve, and are
written only if it resolves True; otherwise they are dropped (the job was not this runner's).
A journal may linger (`linger_s`): a burst of rows waits that long for the rows after it, so a
job that ends meanwhile writes them all with its final state, and a longer one shows its
progress that late.

Durability is what the rows had before (each is committed without waiting for the WAL flush, see
infra/db/audit.py): a crash can lose the last rows of a job that was still running.
The statements are in infra/db/journal.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable
from typing import Any

import asyncpg

from infra.db.audit import AuditEvent
from infra.db.journal import AuditRow, EventRow, Narration, Row, insert_batch, insert_one

log = logging.getLogger("turnout.jobs")


class Journal:
    """Ordered background writes of one job's progress events and audit rows (one event loop)."""

    def __init__(
        self, pool: asyncpg.Pool, *, after: asyncio.Future[bool] | None = None, linger_s: float = 0.0
    ) -> None:
        self._pool = pool
        self._after = after
        self._linger_s = linger_s
        self._hurry = asyncio.Event()  # set by hold() and flush(): a lingering writer stops waiting
        self._pending: deque[Row] = deque()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._alongside: dict[asyncio.Task[object], str] = {}
        self._held = False

    def event(self, job_id: str, kind: str, data: dict[str, Any]) -> None:
        """Queue a progress event (JSON-safe `data`). Informative: a failure is only logged."""
        self._add(EventRow(job_id, kind, data))

    def audit(self, event: AuditEvent) -> None:
        """Queue an audit row; a failure to write it is raised by `flush()`."""
        self._add(AuditRow(event))

    def _add(self, row: Row) -> None:
        self._pending.append(row)  # written after every row added before it
        if not self._held and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._drain())

    def hold(self) -> None:
        """Start no more writes: the rows not yet being written wait for `take_rest()` (or
        `flush()`). Said by the router when its result is ready: the last rows then go with the
        job's final state instead of in a round trip of their own before it."""
        self._held = True
        self._hurry.set()

    def alongside(self, work: Awaitable[object], *, label: str) -> None:
        """Run `work` concurrently (a cache write: an optimisation); `flush()` waits for it and
        logs a failure instead of raising it."""
        self._alongside[asyncio.ensure_future(work)] = label

    async def flush(self) -> None:
        """Wait until every queued row and all work started alongside have been written; raise the
        first failure of an audit row."""
        self._held = False
        self._hurry.set()
        if self._pending and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._drain())
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

    async def take_rest(self) -> Narration:
        """Like `flush()`, except for the rows not yet being written: they are returned instead, for
        the caller to write in its own statement (the job's final one: one round trip fewer). Should
        `flush()` raise, they are written here first."""
        rest = Narration(tuple(self._pending))
        self._pending.clear()
        try:
            await self.flush()
        except BaseException:
            for row in rest.rows:
                self._add(row)
            with contextlib.suppress(Exception):  # the first failure is the one to report
                await self.flush()
            raise
        return rest

    async def _drain(self) -> None:
        if self._after is not None and not await asyncio.shield(self._after):
            self._pending.clear()  # rows added later find this task done and start another: dropped too
            return
        if self._linger_s > 0 and not self._hurry.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hurry.wait(), self._linger_s)
        # Rows added while the connection is being released are picked up by the outer loop: there
        # is no await between its last check and the end of this task.
        while self._pending and not self._held:
            try:
                async with self._pool.acquire() as conn:
                    while self._pending and not self._held:
                        batch = list(self._pending)
                        self._pending.clear()
                        await self._write(conn, batch)
            except Exception as exc:  # no connection: every pending row fails alike
                while self._pending:
                    self._failed(self._pending.popleft(), exc)

    async def _write(self, conn: asyncpg.Connection, batch: list[Row]) -> None:
        try:
            await (insert_batch(conn, batch) if len(batch) > 1 else insert_one(conn, batch[0]))
            return
        except Exception as exc:
            if len(batch) == 1:
                self._failed(batch[0], exc)
                return
        for row in batch:  # one bad row must not take the others with it: each on its own
            try:
                await insert_one(conn, row)
            except Exception as exc:
                self._failed(row, exc)

    def _failed(self, row: Row, exc: BaseException) -> None:
        if isinstance(row, AuditRow) and self._error is None:
            self._error = exc
        else:
            _log_failure(row.label, exc)


def _log_failure(label: str, exc: BaseException) -> None:
    log.warning("could not write %s: %s: %s", label, type(exc).__name__, exc)
