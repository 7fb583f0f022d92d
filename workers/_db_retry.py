"""A task body that reads PostgreSQL runs again on a new connection when its own is cut.

A restart, a failover or a terminated backend costs the task a short pause instead of failing
it; if PostgreSQL stays out of reach the task fails with `DatabaseUnavailable`, a
`ConnectionError` that reaches the job runner (Celery sends it back by name) as the transient
failure it is: the job is re-queued (workers/tasks/jobs.py), not failed as a broken tool.
Only for work that is safe to repeat (reads; the RAG answer reads before its LLM call).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg
from tenacity import AsyncRetrying, before_sleep_log, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from infra.db.pool import DatabaseUnavailable
from infra.transient import POSTGRES_DOWN

R = TypeVar("R")

DB_ATTEMPTS = 3  # the back-off between them stays under 2 s
# After a PostgreSQL crash (the embedded server SIGKILLed and restarted by `turnout up`) idle pool
# connections can be left mid-protocol: the next statement on one raises asyncpg's
# InternalClientError ("another operation is in progress"). It is a dead connection like the others.
RETRIED: tuple[type[Exception], ...] = (*POSTGRES_DOWN, asyncpg.InternalClientError)


async def with_db_retries(
    work: Callable[[], Awaitable[R]], *, log: logging.Logger, pool: asyncpg.Pool | None = None
) -> R:
    """`work()`, again on a lost connection; `DatabaseUnavailable` after `DB_ATTEMPTS` tries.
    With ``pool``, a lost connection also retires its siblings (they died with the same server),
    so the next try gets a fresh one instead of the next dead one."""
    retrying = AsyncRetrying(
        retry=retry_if_exception_type(RETRIED),
        stop=stop_after_attempt(DB_ATTEMPTS),
        wait=wait_exponential_jitter(initial=0.2, max=1.0, jitter=0.2),
        before_sleep=before_sleep_log(log, logging.WARNING),
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                try:
                    return await work()
                except RETRIED:
                    if pool is not None:
                        await pool.expire_connections()
                    raise
    except RETRIED as exc:
        # The first error, not the failed rollback after it ("the underlying connection is closed").
        first = exc.__context__ if isinstance(exc.__context__, RETRIED) else exc
        raise DatabaseUnavailable(
            f"PostgreSQL unreachable over {DB_ATTEMPTS} attempts: {type(first).__name__}: {first}"
        ) from None
    raise AssertionError("unreachable: tenacity either returns or re-raises")
