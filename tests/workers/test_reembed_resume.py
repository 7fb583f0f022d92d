"""Stalled re-embedding runs are resumed (`workers.reembed.resume_reembed_runs`): pending batches
sent again, a run whose batches are all done finalized; the batches run in-process."""

from __future__ import annotations

import pytest

from infra.db import reembed as runs_db
from retrieval import reembed
from retrieval.rag import RagContext, resolve_read_version
from retrieval.reembed import create_reembed_run, process_batch
from tests.retrieval.rag_fixtures import rag_db, rag_settings, store
from tests.retrieval.test_reembed import ctx
from workers import reembed as dispatch
from workers.reembed import resume_reembed_runs

# Shared fixtures (edge/server stores, the own database, the in-process context) used below.
FIXTURES = (rag_db, rag_settings, store, ctx)


async def test_resume_re_enqueues_pending_batches_of_stalled_runs(
    ctx: RagContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, tuple[object, ...]]] = []
    monkeypatch.setattr(dispatch, "_send", lambda _settings, task, *args: sent.append((task, args)))
    run_id, batches = await create_reembed_run(ctx.pool, batch_size=4, settings=ctx.settings)
    await process_batch(ctx, run_id, batches[0])
    assert await resume_reembed_runs(ctx.pool, stale_after_s=3600, settings=ctx.settings) == 0  # still fresh
    assert await resume_reembed_runs(ctx.pool, stale_after_s=0, settings=ctx.settings) == len(batches) - 1
    assert sent == [(dispatch.BATCH_TASK, (run_id, no)) for no in batches[1:]]
    for no in batches[1:]:  # what the re-enqueued messages do
        await process_batch(ctx, run_id, no)
    assert (await runs_db.get_run(ctx.pool, run_id)).status == "succeeded"  # type: ignore[union-attr]
    assert await resume_reembed_runs(ctx.pool, stale_after_s=0, settings=ctx.settings) == 0  # nothing open


async def test_run_with_every_batch_done_but_not_finalized_is_finalized_on_resume(
    ctx: RagContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, tuple[object, ...]]] = []
    monkeypatch.setattr(dispatch, "_send", lambda _settings, task, *args: sent.append((task, args)))
    monkeypatch.setattr(reembed, "finalize_run", _no_finalize)  # the worker dies right before the switch
    run_id, batches = await create_reembed_run(ctx.pool, batch_size=50, settings=ctx.settings)
    for no in batches:
        await process_batch(ctx, run_id, no)
    monkeypatch.undo()
    monkeypatch.setattr(dispatch, "_send", lambda _settings, task, *args: sent.append((task, args)))
    assert await resolve_read_version(ctx) is None
    assert await resume_reembed_runs(ctx.pool, stale_after_s=0, settings=ctx.settings) == 1
    assert sent == [(dispatch.FINALIZE_TASK, (run_id,))]
    assert await reembed.finalize_run(ctx, run_id) is True
    assert await reembed.finalize_run(ctx, run_id) is False  # once
    assert (await resolve_read_version(ctx)) is not None


async def _no_finalize(ctx: RagContext, run_id: str) -> bool:
    return False
