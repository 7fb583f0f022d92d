"""Re-embedding runs from the sending side: plan a run (retrieval/reembed.py) and enqueue its
batches on the ``embeddings`` queue; re-enqueue the batches of runs that stopped making progress.
Safe to call from any process: it only sends messages (the vector worker runs them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import asyncpg

from infra.db import reembed as runs_db
from infra.settings import Settings, get_settings
from retrieval.reembed import create_reembed_run
from workers.app import app_for
from workers.registry import FINALIZE_RUN, REEMBED_BATCH

log = logging.getLogger("turnout.reembed")

BATCH_TASK = REEMBED_BATCH.name
FINALIZE_TASK = FINALIZE_RUN.name


def _send(settings: Settings, task: str, *args: Any) -> None:
    # No expiry: a batch waiting behind a long run must still run (resume covers lost ones).
    app_for(settings).send_task(task, args=list(args), queue=REEMBED_BATCH.queue.value)


async def enqueue_batches(settings: Settings, run_id: str, batch_numbers: Sequence[int]) -> None:
    def send_all() -> None:
        for no in batch_numbers:
            _send(settings, BATCH_TASK, run_id, no)

    await asyncio.to_thread(send_all)


async def start_reembed_run(
    pool: asyncpg.Pool,
    *,
    language: str | None = None,
    ids: list[str] | None = None,
    model: str | None = None,
    batch_size: int | None = None,
    settings: Settings | None = None,
) -> str:
    """Plan a run and enqueue its batches on ``embeddings``; returns the run id. Also indexes a
    fresh installation (no active version yet). Raises ReembedError (bad request) or
    RunConflict (a run is already open)."""
    settings = settings or get_settings()
    run_id, batch_numbers = await create_reembed_run(
        pool, language=language, ids=ids, model=model, batch_size=batch_size, settings=settings
    )
    await enqueue_batches(settings, run_id, batch_numbers)
    log.info("re-embedding run %s started: %d batches", run_id, len(batch_numbers))
    return run_id


# ---- resuming ----
async def resume_reembed_runs(
    pool: asyncpg.Pool, *, stale_after_s: float | None = None, settings: Settings | None = None
) -> int:
    """Re-enqueue the pending batches of open runs that made no progress for ``stale_after_s``
    (default: the job lease); a run with nothing pending gets its finalization re-enqueued.
    Safe to call from any process (it only sends messages); duplicates are no-ops. Returns
    the number of messages sent."""
    settings = settings or get_settings()
    stale = settings.job_lease_s if stale_after_s is None else stale_after_s
    sent = 0
    for run_id in await runs_db.stale_open_runs(pool, stale_after_s=stale):
        pending = await runs_db.pending_batch_numbers(pool, run_id)
        if pending:
            await enqueue_batches(settings, run_id, pending)
            sent += len(pending)
        else:
            await asyncio.to_thread(_send, settings, FINALIZE_TASK, run_id)
            sent += 1
        await runs_db.touch_run(pool, run_id)  # the next sweep waits another stale period
        log.info("resumed re-embedding run %s: %d pending batch(es) re-enqueued", run_id, len(pending))
    return sent


