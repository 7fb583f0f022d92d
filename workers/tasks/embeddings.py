"""Embeddings queue: re-embedding batches and run finalization (the vector worker only).

At start, a worker that consumes ``embeddings`` loads the local model and resumes the runs a
crash left behind; the maintenance sweeper calls ``resume_reembed_runs`` periodically for the
other cases.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from celery import signals

from infra.db.pool import create_pool
from infra.settings import EmbeddingProvider, get_settings
from infra.status import Queue
from retrieval.embeddings import LocalEmbedder
from retrieval.reembed import finalize_run, process_batch
from workers import registry
from workers._runtime import Runtime
from workers.base import run_async, turnout_task
from workers.deps import rag_context
from workers.reembed import resume_reembed_runs

log = logging.getLogger("turnout.reembed")

BATCH_TIME_LIMIT_S = 900.0  # a batch of long articles on a slow endpoint; resumable if exceeded


@turnout_task(registry.REEMBED_BATCH, time_limit_s=BATCH_TIME_LIMIT_S)
def reembed_batch(run_id: str, batch_no: int) -> str:
    async def body(rt: Runtime) -> str:
        result = await process_batch(await rag_context(rt), run_id, batch_no)
        return result.outcome

    return run_async(body, timeout_s=BATCH_TIME_LIMIT_S)


@turnout_task(registry.FINALIZE_RUN, time_limit_s=BATCH_TIME_LIMIT_S)
def finalize(run_id: str) -> bool:
    async def body(rt: Runtime) -> bool:
        return await finalize_run(await rag_context(rt), run_id)

    return run_async(body, timeout_s=BATCH_TIME_LIMIT_S)


def _on_vector_worker_start(ready_at: float) -> None:
    settings = get_settings()
    if settings.embedding_provider is EmbeddingProvider.LOCAL:
        try:
            LocalEmbedder().embed_sync(["warm-up"])  # load the weights before the first question
        except Exception:
            log.exception("could not load the local embedding model")
    _resume_now(ready_at)


def _resume_now(ready_at: float) -> None:
    async def go() -> int:
        settings = get_settings()
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        try:
            # The runs left open before this worker started (its predecessor died); not one that
            # made progress since (it has a live worker; the warm-up above can take a while).
            idle_since_start = max(0.0, time.monotonic() - ready_at)
            return await resume_reembed_runs(pool, stale_after_s=idle_since_start, settings=settings)
        finally:
            await pool.close()

    try:
        sent = asyncio.run(go())
        if sent:
            # Also a run queued just before this start is "open": its batches may be queued twice;
            # a batch already done is skipped, so the copy costs a lookup.
            log.info("open re-embedding runs at start: %d pending message(s) sent again "
                     "(a batch already done is skipped)", sent)
    except Exception:  # start-up must not fail because resuming did; the sweeper retries
        log.exception("could not resume re-embedding runs at worker start")


@signals.worker_ready.connect
def _resume_on_start(sender: Any = None, **_: Any) -> None:
    task_consumer = getattr(sender, "task_consumer", None)
    queues = {q.name for q in task_consumer.queues} if task_consumer is not None else set()
    if Queue.EMBEDDINGS.value in queues:
        # Off the start-up path: the worker starts consuming while this runs.
        threading.Thread(
            target=_on_vector_worker_start, args=(time.monotonic(),), name="vector-worker-start", daemon=True
        ).start()
