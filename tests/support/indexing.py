"""Index articles into the vector store through a real re-embedding run, and wait for it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import asyncpg

from infra.db.pool import create_pool
from infra.db.reembed import Run, get_run
from infra.settings import Settings
from retrieval.reembed import RunConflict
from workers.reembed import start_reembed_run


async def index_and_wait(
    pool: asyncpg.Pool, settings: Settings, *, ids: Sequence[str] | None = None, timeout_s: float = 180.0
) -> Run:
    """Start a run (after any run already open has finished) and wait until it succeeds."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            run_id = await start_reembed_run(pool, ids=list(ids) if ids is not None else None, settings=settings)
            break
        except RunConflict:  # one run at a time: let the open one finish first
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    while True:
        run = await get_run(pool, run_id)
        assert run is not None
        if run.status not in ("queued", "running"):
            assert run.status == "succeeded", f"re-embedding run {run_id} ended {run.status}: {run.error}"
            return run
        if time.monotonic() > deadline:
            raise TimeoutError(f"re-embedding run {run_id} did not finish in {timeout_s:.0f}s: {run}")
        await asyncio.sleep(0.2)


def index_ids_sync(settings: Settings, ids: Sequence[str] | None, *, timeout_s: float) -> None:
    """`index_and_wait` for these ids (None: every article) from a synchronous (session or module) fixture, over a pool
    of its own."""

    async def index() -> None:
        pool = await create_pool(settings.database_url, min_size=1, max_size=2)
        try:
            await index_and_wait(pool, settings, ids=ids, timeout_s=timeout_s)
        finally:
            await pool.close()

    asyncio.run(index())
